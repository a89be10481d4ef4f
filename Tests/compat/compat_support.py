"""Helpers for the Firebase Auth Emulator compatibility suite (fixtures live in conftest.py).

The emulator's tests (firebase-tools, src/emulator/auth/*.spec.ts) drive its Express app with
supertest; these helpers are the same moves over HTTP against a real `herald serve`:

* `call(srv, method, body, family=..., admin=...)` - one Identity Toolkit call under a path family
  (`v1`, `v1p` = project-scoped v1, `v3` = legacy relyingparty, `v3short` = the same without the
  `www.googleapis.com` host segment). App calls carry `?key=`, admin calls `Bearer owner`.
* `register_user`, `sign_in_with_password`, `create_email_sign_in_oob`, `sign_in_with_email_link`,
  `inspect_oobs`, `get_signin_methods`, `update_account_by_local_id`, ... mirror
  testing/helpers.ts of the emulator, name for name.
* `expect_status` / `expect_error` are the emulator's `expectStatusCode` and its
  `expect(res.body.error.message)...` checks.

Servers of this suite are shared by a whole module, so every test works on addresses of its own
(`unique_email`) and reads the emulator-mode code listing filtered to them (`inspect_oobs(srv,
*emails)`), where the emulator tests start from an empty project each time.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Optional
from urllib.parse import quote

import jwt
import pytest
import requests

from helpers import API_KEY
from http_support import HTTP_TIMEOUT, PROJECT, KIND

__all__ = [
    "API_KEY", "PROJECT", "KIND", "COMPAT_OVERRIDES", "FAMILIES", "LEGACY", "call", "path_of", "token_call",
    "expect_status", "expect_ok", "expect_error", "error_message", "unique_email", "register_user",
    "sign_in_with_password", "create_email_sign_in_oob", "sign_in_with_email_link", "inspect_oobs",
    "get_signin_methods", "get_account_info_by_id_token", "get_account_info_by_local_id",
    "update_account_by_local_id", "expect_id_token_expired", "expect_user_not_exists_for_id_token",
    "delete_account", "decode_jwt", "next_second", "fake_claims", "sign_in_with_fake_claims", "unique_sub", "CONTINUE_URL", "SIGN_IN_SETTINGS", "HTTP_TIMEOUT",
]

# --------------------------------------------------------------------------- configuration
# The Auth Emulator's defaults: no enumeration protection ("improved email privacy" off), codes
# listed at /emulator/v1/projects/{p}/oobCodes and never mailed, `Bearer owner` accepted.
# Herald's own rules the emulator lacks are opened just enough for its tests: no cooldown, a
# daily cap nobody reaches, and the hosts the emulator tests use as authorized domains.
COMPAT_OVERRIDES: dict = {
    "server": {"enumerationProtection": False, "emulatorMode": True, "allowEmulatorOwner": True},
    "links": {"authorizedDomains": ["localhost", f"{PROJECT}.firebaseapp.com", "example.com", "app.example.com"]},
    "policy": {"cooldown": "0s", "dailyCap": 1000000},
}

# The emulator's createEmailSignInOob sends no continueUrl; Herald (like production Firebase)
# requires one, with canHandleCodeInApp, for EMAIL_SIGNIN. See README.md "Adaptations".
CONTINUE_URL = "http://localhost/finish"
SIGN_IN_SETTINGS = {"continueUrl": CONTINUE_URL, "canHandleCodeInApp": True}

# --------------------------------------------------------------------------- paths
# v1 method -> legacy v3 relyingparty name.
LEGACY = {
    "sendOobCode": "getOobConfirmationCode",
    "signInWithEmailLink": "emailLinkSignin",
    "resetPassword": "resetPassword",
    "update": "setAccountInfo",
    "lookup": "getAccountInfo",
    "createAuthUri": "createAuthUri",
    "signInWithPassword": "verifyPassword",
    "signUp": "signupNewUser",
    "delete": "deleteAccount",
    "signInWithIdp": "verifyAssertion",
}
FAMILIES = ["v1", "v3"]  # what core cases are parametrized over


def path_of(method: str, family: str = "v1") -> str:
    if family == "v1":
        return f"/identitytoolkit.googleapis.com/v1/accounts:{method}"
    if family == "v1p":
        return f"/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/accounts:{method}"
    if family == "v3":
        return f"/www.googleapis.com/identitytoolkit/v3/relyingparty/{LEGACY[method]}"
    if family == "v3short":
        return f"/identitytoolkit/v3/relyingparty/{LEGACY[method]}"
    raise ValueError(f"unknown path family {family!r}")


def _show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code}\n{resp.text[:2000]}"


def call(srv, method: str, body: Any = None, *, family: str = "v1", admin: bool = False,
         key: Optional[str] = "default", authorization: Optional[str] = None,
         headers: Optional[dict] = None) -> requests.Response:
    """POST one Identity Toolkit method. App calls (`admin=False`) send `?key=API_KEY`; admin
    calls send `Authorization: Bearer owner` and no key, as the emulator tests do. `key=None`
    drops the key, `authorization=` sets the header verbatim."""
    if key == "default":
        key = None if admin else API_KEY
    params = {"key": key} if key is not None else {}
    hdrs = dict(headers or {})
    if admin:
        hdrs["Authorization"] = "Bearer owner"
    if authorization is not None:
        hdrs["Authorization"] = authorization
    return requests.post(srv.url + path_of(method, family), params=params, headers=hdrs,
                         json=body if body is not None else {}, timeout=HTTP_TIMEOUT, allow_redirects=False)


def token_call(srv, *, form: Optional[dict] = None, json_body: Optional[dict] = None,
               path: str = "/securetoken.googleapis.com/v1/token", key: Optional[str] = API_KEY) -> requests.Response:
    """POST the Secure Token API (token refresh), form-encoded (`form=`) or JSON (`json_body=`)."""
    params = {"key": key} if key is not None else {}
    kwargs: dict = {"params": params, "timeout": HTTP_TIMEOUT, "allow_redirects": False}
    if form is not None:
        kwargs["data"] = form
    else:
        kwargs["json"] = json_body or {}
    return requests.post(srv.url + path, **kwargs)


# --------------------------------------------------------------------------- expectations
def expect_status(expected: int, resp: requests.Response) -> None:
    """The emulator's expectStatusCode."""
    assert resp.status_code == expected, f"expected {expected}\n{_show(resp)}"


def expect_ok(resp: requests.Response) -> dict:
    expect_status(200, resp)
    assert resp.headers.get("Content-Type", "").startswith("application/json"), _show(resp)
    body = resp.json()
    assert isinstance(body, dict), _show(resp)
    assert "error" not in body, _show(resp)
    return body


def error_message(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        pytest.fail(f"error body is not JSON\n{_show(resp)}")
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), _show(resp)
    message = body["error"].get("message")
    assert isinstance(message, str), _show(resp)
    return message


def expect_error(resp: requests.Response, message: str, status: int = 400, *, exact: bool = False,
                 contains: bool = False) -> str:
    """`expect(res.body.error.message)` in Firebase's envelope with this HTTP status.

    A bare code (`"EMAIL_EXISTS"`) matches `EMAIL_EXISTS` or `EMAIL_EXISTS : <detail>` (the form
    Firebase clients split on; Herald adds details the emulator leaves out). A message that
    carries its own detail, or `exact=True`, must match exactly. `contains=True` is the
    emulator's `.contain(...)`."""
    expect_status(status, resp)
    actual = error_message(resp)
    error = resp.json()["error"]
    assert error.get("code") == status, _show(resp)
    if contains:
        assert message in actual, f"expected a message containing {message!r}\n{_show(resp)}"
    elif exact or " : " in message:
        assert actual == message, f"expected message {message!r}\n{_show(resp)}"
    else:
        assert actual == message or actual.startswith(message + " : "), f"expected {message!r}\n{_show(resp)}"
    return actual


# --------------------------------------------------------------------------- accounts
def unique_email(tag: str = "user", domain: str = "example.com") -> str:
    return f"{tag}-{os.getpid()}-{time.monotonic_ns()}@{domain}".lower()


def register_user(srv, email: str, password: str = "notasecret", *, family: str = "v1", **extra) -> dict:
    """registerUser: app signUp; returns {idToken, localId, refreshToken, email}."""
    body = expect_ok(call(srv, "signUp", {"email": email, "password": password, **extra}, family=family))
    return {k: body.get(k) for k in ("idToken", "localId", "refreshToken", "email")}


def sign_in_with_password(srv, email: str, password: str, *, family: str = "v1") -> dict:
    body = expect_ok(call(srv, "signInWithPassword", {"email": email, "password": password}, family=family))
    return {k: body.get(k) for k in ("idToken", "localId", "refreshToken", "email")}


def create_email_sign_in_oob(srv, email: str, *, family: str = "v1") -> dict:
    """createEmailSignInOob: admin sendOobCode EMAIL_SIGNIN with returnOobLink (plus the
    continueUrl/canHandleCodeInApp Herald requires)."""
    body = expect_ok(call(srv, "sendOobCode", {"email": email, "requestType": "EMAIL_SIGNIN", "returnOobLink": True,
                                               **SIGN_IN_SETTINGS}, family=family, admin=True))
    assert isinstance(body.get("oobCode"), str) and isinstance(body.get("oobLink"), str), body
    return {"oobCode": body["oobCode"], "oobLink": body["oobLink"]}


def sign_in_with_email_link(srv, email: str, id_token_to_link: Optional[str] = None, *, family: str = "v1") -> dict:
    code = create_email_sign_in_oob(srv, email)["oobCode"]
    body = {"email": email, "oobCode": code}
    if id_token_to_link is not None:
        body["idToken"] = id_token_to_link
    resp = call(srv, "signInWithEmailLink", body, family=family)
    data = resp.json() if resp.headers.get("Content-Type", "").startswith("application/json") else {}
    return {"idToken": data.get("idToken"), "localId": data.get("localId"),
            "refreshToken": data.get("refreshToken"), "email": email, "response": resp}


def inspect_oobs(srv, *emails: str) -> list:
    """inspectOobs: the emulator-mode listing, limited to codes whose email or newEmail is one of
    `emails` (the server is shared by the module's tests)."""
    resp = requests.get(f"{srv.url}/emulator/v1/projects/{PROJECT}/oobCodes", timeout=HTTP_TIMEOUT)
    body = expect_ok(resp)
    codes = body.get("oobCodes")
    assert isinstance(codes, list), body
    wanted = {e.lower() for e in emails}
    return [c for c in codes
            if (c.get("email") or "").lower() in wanted or (c.get("newEmail") or "").lower() in wanted]


def get_signin_methods(srv, email: str, *, family: str = "v1") -> list:
    body = expect_ok(call(srv, "createAuthUri", {"continueUri": "http://example.com/", "identifier": email},
                          family=family))
    return body.get("signinMethods", [])


def get_account_info_by_id_token(srv, id_token: str, *, family: str = "v1") -> dict:
    body = expect_ok(call(srv, "lookup", {"idToken": id_token}, family=family))
    users = body.get("users") or []
    assert len(users) == 1, body
    return users[0]


def get_account_info_by_local_id(srv, local_id: str, *, family: str = "v1") -> dict:
    body = expect_ok(call(srv, "lookup", {"localId": [local_id]}, family=family, admin=True))
    users = body.get("users") or []
    assert len(users) == 1, body
    return users[0]


def update_account_by_local_id(srv, local_id: str, fields: dict, *, family: str = "v1") -> dict:
    return expect_ok(call(srv, "update", {"localId": local_id, **fields}, family=family, admin=True))


def expect_id_token_expired(srv, id_token: str, *, family: str = "v1") -> None:
    expect_error(call(srv, "lookup", {"idToken": id_token}, family=family), "TOKEN_EXPIRED")


def expect_user_not_exists_for_id_token(srv, id_token: str, *, family: str = "v1") -> None:
    expect_error(call(srv, "lookup", {"idToken": id_token}, family=family), "USER_NOT_FOUND")


def delete_account(srv, body: dict, *, family: str = "v1") -> Optional[str]:
    data = expect_ok(call(srv, "delete", body, family=family))
    return data.get("kind")


# --------------------------------------------------------------------------- identity providers
def unique_sub() -> str:
    """A provider user id of its own (the emulator's tests reuse `123456789012345678901`)."""
    return f"{os.getpid()}{time.monotonic_ns()}"


def fake_claims(**claims) -> dict:
    """fakeClaims: the emulator's unsigned ID token claims (`sub` required), with its fixed iss/aud/exp/iat."""
    return {"iss": "example.com", "aud": "example.com", "exp": 1597974008, "iat": 1597970408, **claims}


def sign_in_with_fake_claims(srv, provider_id: str, claims: dict, *, family: str = "v1") -> dict:
    """signInWithFakeClaims: signInWithIdp with the claims as an unsigned JSON id_token; returns
    {idToken, localId, refreshToken, email}."""
    token = json.dumps(fake_claims(**claims))
    body = expect_ok(call(srv, "signInWithIdp", {
        "postBody": f"providerId={quote(provider_id, safe='')}&id_token={quote(token, safe='')}",
        "requestUri": "http://localhost", "returnIdpCredential": True, "returnSecureToken": True}, family=family))
    return {k: body.get(k) for k in ("idToken", "localId", "refreshToken", "email")}


# --------------------------------------------------------------------------- tokens and time
def decode_jwt(token: Any) -> dict:
    """jsonwebtoken's decode(t, {complete: true}): {header, payload}, signature not checked."""
    assert isinstance(token, str) and re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", token), \
        f"not a JWT: {token!r}"
    header = jwt.get_unverified_header(token)
    payload = jwt.decode(token, options={"verify_signature": False})
    return {"header": header, "payload": payload}


def next_second() -> None:
    """The emulator ticks its fake clock (`getClock().tick(2000)`) so that tokens are issued in
    the past; validSince and iat have one-second resolution, so real time must move on."""
    time.sleep(1.1)

"""Herald behaviour around the ported cases that the emulator's own tests do not pin down:
the legacy v3 paths as a whole, the Secure Token API's encodings and the sessions it refuses,
signed ID tokens and their public keys, recover-email codes, the update rules of production,
and protobuf-JSON leniency. Each docstring names the behaviour (`herald: ...`), not an emulator
case; where one extends an emulator case it says which.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests

from compat_support import (
    API_KEY, CONTINUE_URL, HTTP_TIMEOUT, KIND, PROJECT, call, decode_jwt, expect_error, expect_ok,
    get_account_info_by_id_token, inspect_oobs, next_second, register_user, token_call, unique_email,
)
from http_support import ADMIN_TOKEN

PASSWORD = "notasecret"


# --------------------------------------------------------------------------- legacy v3 paths
@pytest.mark.parametrize("family", ["v3", "v3short"])
def test_every_legacy_method_answers_like_v1(emu, family):
    """herald: every v3 relyingparty method, under both prefixes, answers with the v1 kind"""
    email, new_email = unique_email("legacy"), unique_email("legacy-new")
    body = expect_ok(call(emu, "signUp", {"email": email, "password": PASSWORD}, family=family))
    assert body["kind"] == KIND["signUp"], body
    id_token, local_id = body["idToken"], body["localId"]

    body = expect_ok(call(emu, "signInWithPassword", {"email": email, "password": PASSWORD}, family=family))
    assert body["kind"] == KIND["signInWithPassword"] and body["localId"] == local_id, body
    body = expect_ok(call(emu, "lookup", {"idToken": id_token}, family=family))
    assert body["kind"] == KIND["lookup"] and body["users"][0]["localId"] == local_id, body
    body = expect_ok(call(emu, "createAuthUri", {"identifier": email, "continueUri": "http://localhost/"},
                          family=family))
    assert body["kind"] == KIND["createAuthUri"] and body["registered"] is True, body

    body = expect_ok(call(emu, "sendOobCode", {"requestType": "PASSWORD_RESET", "email": email}, family=family))
    assert body == {"kind": KIND["sendOobCode"], "email": email}, body
    [reset] = [c for c in inspect_oobs(emu, email) if c["requestType"] == "PASSWORD_RESET"]
    body = expect_ok(call(emu, "resetPassword", {"oobCode": reset["oobCode"]}, family=family))
    assert body["kind"] == KIND["resetPassword"] and body["requestType"] == "PASSWORD_RESET", body

    body = expect_ok(call(emu, "sendOobCode", {"requestType": "EMAIL_SIGNIN", "email": new_email,
                                               "continueUrl": CONTINUE_URL, "canHandleCodeInApp": True}, family=family))
    [sign_in] = inspect_oobs(emu, new_email)
    body = expect_ok(call(emu, "signInWithEmailLink", {"email": new_email, "oobCode": sign_in["oobCode"]},
                          family=family))
    assert body["kind"] == KIND["signInWithEmailLink"] and body["isNewUser"] is True, body

    body = expect_ok(call(emu, "update", {"idToken": id_token, "displayName": "Legacy"}, family=family))
    assert body["kind"] == KIND["update"], body
    body = expect_ok(call(emu, "delete", {"idToken": body.get("idToken", id_token)}, family=family))
    assert body["kind"] == "identitytoolkit#DeleteAccountResponse", body


@pytest.mark.parametrize("family", ["v3", "v3short"])
def test_legacy_errors_and_credentials_are_those_of_v1(emu, family):
    """herald: v3 paths refuse like v1 (same envelope and code), and take the admin token"""
    email = unique_email("legacy-err")
    register_user(emu, email, PASSWORD)
    for fam in ("v1", family):
        expect_error(call(emu, "signUp", {"email": email, "password": PASSWORD}, family=fam), "EMAIL_EXISTS")
        expect_error(call(emu, "resetPassword", {"oobCode": "bogus"}, family=fam), "INVALID_OOB_CODE")
    resp = call(emu, "lookup", {"email": [email]}, family=family, key=None, authorization=f"Bearer {ADMIN_TOKEN}")
    assert expect_ok(resp)["users"][0]["email"] == email
    resp = call(emu, "signUp", {"email": unique_email("nokey"), "password": PASSWORD}, family=family, key=None)
    assert resp.status_code == 403, resp.text


# --------------------------------------------------------------------------- token refresh
@pytest.mark.parametrize("encoding", ["form-snake", "json-snake", "json-camel"])
@pytest.mark.parametrize("path", ["/securetoken.googleapis.com/v1/token", "/v1/token"])
def test_token_refresh_encodings(emu, encoding, path):
    """herald: token refresh takes the SDKs' form body and JSON in both spellings (extends misc.spec.ts: should exchange refresh token for new tokens)"""
    user = register_user(emu, unique_email("refresh"), PASSWORD)
    token = user["refreshToken"]
    if encoding == "form-snake":
        resp = token_call(emu, form={"grant_type": "refresh_token", "refresh_token": token}, path=path)
    elif encoding == "json-snake":
        resp = token_call(emu, json_body={"grant_type": "refresh_token", "refresh_token": token}, path=path)
    else:
        resp = token_call(emu, json_body={"grantType": "refresh_token", "refreshToken": token}, path=path)
    body = expect_ok(resp)
    assert body["expires_in"] == "3600", body
    assert body["token_type"] == "Bearer", body
    assert body["user_id"] == user["localId"], body
    assert body["access_token"] == body["id_token"], body
    # The new ID token works, and so does the refresh token handed back.
    assert get_account_info_by_id_token(emu, body["id_token"])["localId"] == user["localId"]
    again = expect_ok(token_call(emu, form={"grant_type": "refresh_token", "refresh_token": body["refresh_token"]},
                                 path=path))
    assert again["user_id"] == user["localId"], again


def test_token_refresh_errors_use_the_firebase_envelope(emu):
    """herald: Secure Token API errors are 400 {"error":{"code":400,"message":CODE,...}}"""
    for form, code in [({"refresh_token": "x"}, "MISSING_GRANT_TYPE"),
                       ({"grant_type": "password", "refresh_token": "x"}, "INVALID_GRANT_TYPE"),
                       ({"grant_type": "refresh_token"}, "MISSING_REFRESH_TOKEN"),
                       ({"grant_type": "refresh_token", "refresh_token": "x"}, "INVALID_REFRESH_TOKEN")]:
        resp = token_call(emu, form=form)
        expect_error(resp, code)
        assert isinstance(resp.json()["error"].get("errors"), list), resp.text


@pytest.fixture(scope="module")
def aged_sessions(emu):
    """Five accounts signed in at least a second ago (one shared wait), for the revocations."""
    sessions = {name: {**register_user(emu, unique_email(name), PASSWORD)}
                for name in ("reset", "password", "email", "revoke", "control")}
    next_second()
    return sessions


def _revoke(emu, name: str, session: dict) -> None:
    if name == "reset":
        expect_ok(call(emu, "sendOobCode", {"requestType": "PASSWORD_RESET", "email": session["email"]}))
        [code] = [c for c in inspect_oobs(emu, session["email"]) if c["requestType"] == "PASSWORD_RESET"]
        expect_ok(call(emu, "resetPassword", {"oobCode": code["oobCode"], "newPassword": "notasecret2"}))
    elif name == "password":
        expect_ok(call(emu, "update", {"idToken": session["idToken"], "password": "notasecret2"}))
    elif name == "email":
        expect_ok(call(emu, "update", {"idToken": session["idToken"], "email": unique_email("moved")}))
    elif name == "revoke":
        expect_ok(call(emu, "update", {"localId": session["localId"], "validSince": str(int(time.time()))},
                       admin=True))


@pytest.mark.parametrize("name", ["reset", "password", "email", "revoke"])
def test_token_refresh_after_the_session_was_ended_is_token_expired(emu, aged_sessions, name):
    """herald: a refresh token older than the account's validSince is TOKEN_EXPIRED (password reset, password change, email change, admin revoke)"""
    session = aged_sessions[name]
    _revoke(emu, name, session)
    expect_error(token_call(emu, form={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]}),
                 "TOKEN_EXPIRED")
    expect_error(call(emu, "lookup", {"idToken": session["idToken"]}), "TOKEN_EXPIRED")


def test_token_refresh_of_an_untouched_aged_session_still_works(emu, aged_sessions):
    """herald: the control for the revocations above (same age, nothing changed)"""
    session = aged_sessions["control"]
    body = expect_ok(token_call(emu, form={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]}))
    assert body["user_id"] == session["localId"]


# --------------------------------------------------------------------------- signed ID tokens
def test_id_tokens_are_rs256_with_published_keys_and_firebase_claims(emu):
    """herald: ID tokens are RS256 JWTs with a kid, verifiable with /.well-known/jwks.json, carrying Firebase's claims"""
    email = unique_email("claims")
    before = int(time.time())
    user = register_user(emu, email, PASSWORD)
    token = user["idToken"]
    header = decode_jwt(token)["header"]
    assert header["alg"] == "RS256" and header.get("kid"), header

    resp = requests.get(emu.url + "/.well-known/jwks.json", timeout=HTTP_TIMEOUT)
    jwks = expect_ok(resp)
    keys = {k.get("kid"): k for k in jwks.get("keys", [])}
    assert header["kid"] in keys, jwks
    key = jwt.PyJWK(keys[header["kid"]], algorithm="RS256").key
    claims = jwt.decode(token, key, algorithms=["RS256"], audience=PROJECT,
                        issuer=f"https://securetoken.google.com/{PROJECT}")
    assert claims["sub"] == claims["user_id"] == user["localId"], claims
    assert claims["email"] == email and claims["email_verified"] is False, claims
    assert before - 1 <= claims["iat"] <= int(time.time()) + 1, claims
    assert claims["exp"] == claims["iat"] + 3600, claims
    assert claims["auth_time"] <= claims["iat"], claims
    assert claims["firebase"]["sign_in_provider"] == "password", claims
    assert claims["firebase"]["identities"] == {"email": [email]}, claims

    # A token signed with another key is refused.
    forged = jwt.encode({**claims}, "not-the-key-" * 4, algorithm="HS256", headers={"kid": header["kid"]})
    expect_error(call(emu, "lookup", {"idToken": forged}), "INVALID_ID_TOKEN")


# --------------------------------------------------------------------------- recover email
def test_recover_email_code_is_listed_inspected_and_restores_the_old_address(emu):
    """herald: update {idToken, email} leaves a RECOVER_EMAIL code for the old address (extends setAccountInfo.spec.ts: should reset email when OOB flow is initiated, after updating user email)"""
    old_email, new_email = unique_email("old"), unique_email("new")
    user = register_user(emu, old_email, PASSWORD)
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "email": new_email}))
    assert body["email"] == new_email and body.get("emailVerified", False) is False, body
    assert isinstance(body.get("idToken"), str) and isinstance(body.get("refreshToken"), str), body
    assert body.get("expiresIn") == "3600", body

    [code] = inspect_oobs(emu, old_email, new_email)
    assert code["requestType"] == "RECOVER_EMAIL", code
    assert code["email"] == old_email and code.get("newEmail") == new_email, code
    link = urlsplit(code["oobLink"])
    params = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert link.path == "/__/auth/action", code["oobLink"]
    assert params["mode"] == "recoverEmail" and params["oobCode"] == code["oobCode"], params
    assert params["apiKey"] == API_KEY, params

    # Inspecting does not consume.
    for _ in range(2):
        body = expect_ok(call(emu, "resetPassword", {"oobCode": code["oobCode"]}))
        assert body["requestType"] == "RECOVER_EMAIL", body
        assert body["email"] == old_email and body.get("newEmail") == new_email, body

    body = expect_ok(call(emu, "update", {"oobCode": code["oobCode"]}))
    assert body["email"] == old_email and body["emailVerified"] is True, body
    expect_ok(call(emu, "signInWithPassword", {"email": old_email, "password": PASSWORD}))
    expect_error(call(emu, "update", {"oobCode": code["oobCode"]}), "INVALID_OOB_CODE")


# --------------------------------------------------------------------------- update rules
def test_update_email_from_an_app_is_refused_under_enumeration_protection(emu_protected):
    """herald: with enumeration protection, update {idToken, email} is OPERATION_NOT_ALLOWED (verify before update)"""
    user = register_user(emu_protected, unique_email("protected"), PASSWORD)
    expect_error(call(emu_protected, "update", {"idToken": user["idToken"], "email": unique_email("elsewhere")}),
                 "OPERATION_NOT_ALLOWED")


def test_update_password_too_short_is_weak_password(emu):
    """herald: update {idToken, password} under 6 characters is WEAK_PASSWORD"""
    email = unique_email("weak")
    user = register_user(emu, email, PASSWORD)
    expect_error(call(emu, "update", {"idToken": user["idToken"], "password": "12345"}), "WEAK_PASSWORD")
    expect_ok(call(emu, "signInWithPassword", {"email": email, "password": PASSWORD}))


def test_update_disable_user_with_an_id_token_is_operation_not_allowed(emu):
    """herald: an app cannot disable its own account (disableUser with idToken)"""
    user = register_user(emu, unique_email("selfdisable"), PASSWORD)
    expect_error(call(emu, "update", {"idToken": user["idToken"], "disableUser": True}), "OPERATION_NOT_ALLOWED")


def test_update_without_id_token_code_or_admin_is_invalid_req_type(emu):
    """herald: update from an app with neither idToken nor oobCode is INVALID_REQ_TYPE"""
    expect_error(call(emu, "update", {"displayName": "Nobody"}), "INVALID_REQ_TYPE : Unsupported request parameters.")


def test_update_returns_tokens_on_return_secure_token(emu):
    """herald: update {idToken, password, returnSecureToken} answers fresh tokens that work"""
    user = register_user(emu, unique_email("rst"), PASSWORD)
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "password": "notasecret2",
                                          "returnSecureToken": True}))
    assert body.get("expiresIn") == "3600", body
    assert get_account_info_by_id_token(emu, body["idToken"])["localId"] == user["localId"]


# --------------------------------------------------------------------------- protobuf JSON
@pytest.mark.parametrize("number, mode", [(1, "resetPassword"), (4, "verifyEmail"), (6, "signIn"),
                                          (7, "verifyAndChangeEmail")])
def test_integer_request_types(emu, number, mode):
    """herald: integer enums for every requestType (extends rest.spec.ts: should handle integer values for enums)"""
    email = unique_email("int")
    register_user(emu, email, PASSWORD)
    body = {"email": email, "requestType": number, "returnOobLink": True}
    if number == 6:
        body = {**body, "email": unique_email("int-link"), "continueUrl": CONTINUE_URL, "canHandleCodeInApp": True}
    if number == 7:
        body["newEmail"] = unique_email("int-new")
    answer = expect_ok(call(emu, "sendOobCode", body, admin=True))
    assert f"mode={mode}" in answer["oobLink"], answer


def test_integer_delete_attributes(emu):
    """herald: deleteAttribute takes the proto numbers (2 DISPLAY_NAME, 4 PHOTO_URL)"""
    user = register_user(emu, unique_email("intattr"), PASSWORD)
    expect_ok(call(emu, "update", {"idToken": user["idToken"], "displayName": "Ada",
                                   "photoUrl": "http://localhost/ada.png"}))
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "deleteAttribute": [2, 4]}))
    assert "displayName" not in body and "photoUrl" not in body, body
    info = get_account_info_by_id_token(emu, user["idToken"])
    assert "displayName" not in info and "photoUrl" not in info, info


def test_snake_case_field_names(emu):
    """herald: proto field names (request_type, return_oob_link) work like their JSON names"""
    email = unique_email("snake")
    register_user(emu, email, PASSWORD)
    expect_ok(call(emu, "sendOobCode", {"email": email, "request_type": "PASSWORD_RESET"}))
    body = expect_ok(call(emu, "sendOobCode", {"email": email, "request_type": "PASSWORD_RESET",
                                               "return_oob_link": True}, admin=True))
    assert "mode=resetPassword" in body.get("oobLink", ""), body


def test_unspecified_request_type_is_missing_req_type(emu):
    """herald: OOB_REQ_TYPE_UNSPECIFIED (and 0) is MISSING_REQ_TYPE"""
    email = unique_email("unspec")
    expect_error(call(emu, "sendOobCode", {"email": email, "requestType": "OOB_REQ_TYPE_UNSPECIFIED"}),
                 "MISSING_REQ_TYPE")
    expect_error(call(emu, "sendOobCode", {"email": email, "requestType": 0}), "MISSING_REQ_TYPE")


def test_unknown_fields_are_invalid_argument(emu):
    """herald: a field no Identity Toolkit request has is INVALID_ARGUMENT, as in production"""
    expect_error(call(emu, "signUp", {"email": unique_email("strict"), "password": PASSWORD, "favouriteColour": "red"}),
                 "INVALID_ARGUMENT")
    expect_error(call(emu, "signUp", {"email": unique_email("strict"), "password": PASSWORD, "favourite_colour": 1},
                      family="v3"), "INVALID_ARGUMENT")

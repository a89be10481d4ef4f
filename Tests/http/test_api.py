"""The Identity Toolkit v1 surface of `herald serve`: routing, credentials,
sendOobCode and its errors, throttling, enumeration protection, accounts, and
what malformed input gets (a 400 envelope, never a 500)."""

from __future__ import annotations

import base64
import json
import re
import time

import pytest
import requests

from helpers import ACTION_URL, API_KEY, OOB_CODE_RE, action_link, parse_link, query, row_count
from http_support import (
    CONTINUE, HTTP_TIMEOUT, KIND, PREFIXES, PROJECT, assert_envelope, assert_error,
    code_of, is_jwt, ok, unique_email,
)

PASSWORD = "correct-horse-1"
POLISH_LETTERS = "[ąćęłńóśźżĄĆĘŁŃÓŚŹŻ]"


def check_web_link(link: str, mode: str, *, lang: str = "en", continue_url=CONTINUE) -> dict:
    parsed = parse_link(link)
    assert parsed["base"] == ACTION_URL, link
    params = parsed["params"]
    assert params["apiKey"] == API_KEY, link
    assert params["mode"] == mode, link
    assert params["lang"] == lang, link
    assert OOB_CODE_RE.fullmatch(params["oobCode"]), link
    if continue_url is None:
        assert "continueUrl" not in params, link
    else:
        assert params["continueUrl"] == continue_url, link
    return params


def outbox_rows(srv, recipient: str) -> list:
    return [r for r in query(srv.db_path, "SELECT * FROM outbox") if r["recipient"].lower() == recipient.lower()]


# --------------------------------------------------------------------------- routing and credentials
@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_path_prefix_serves_the_api(server, prefix):
    srv = server()
    email = unique_email("prefix")
    resp = srv.post("accounts:signUp", {"email": email, "password": PASSWORD}, prefix=prefix)
    assert ok(resp)["email"] == email
    assert ok(srv.post("accounts:signInWithPassword", {"email": email, "password": PASSWORD}, prefix=prefix))


def test_api_key_is_accepted_in_the_x_goog_api_key_header(server):
    srv = server()
    resp = srv.post("accounts:signUp", {"email": unique_email("hdr"), "password": PASSWORD},
                    key=None, headers={"x-goog-api-key": API_KEY})
    ok(resp)


def test_missing_api_key_is_403_permission_denied(server):
    srv = server()
    resp = srv.post("accounts:signUp", {"email": unique_email("nokey"), "password": PASSWORD}, key=None)
    assert resp.status_code == 403, resp.text
    error = resp.json()["error"]
    assert error["code"] == 403
    assert error["message"] == "The request is missing a valid API key."
    assert error["status"] == "PERMISSION_DENIED"
    assert row_count(srv.db_path, "accounts") == 0


def test_wrong_api_key_is_400_api_key_not_valid(server):
    srv = server()
    resp = srv.post("accounts:signUp", {"email": unique_email("badkey"), "password": PASSWORD}, key="nope")
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == 400
    assert error["message"].startswith("API key not valid"), error
    assert row_count(srv.db_path, "accounts") == 0


def test_another_projects_path_is_refused(server):
    srv = server()
    resp = srv.post("accounts:signUp", {"email": unique_email("proj"), "password": PASSWORD},
                    prefix="/v1/projects/some-other-project/")
    assert 400 <= resp.status_code < 500, resp.text
    assert row_count(srv.db_path, "accounts") == 0


def test_unknown_method_is_a_client_error(server):
    srv = server()
    resp = srv.post("accounts:doesNotExist", {})
    assert 400 <= resp.status_code < 500, resp.text


def test_return_oob_link_needs_admin_credentials(server):
    srv = server()
    email = unique_email("insufficient")
    srv.sign_up(email, PASSWORD)
    resp = srv.send_oob("PASSWORD_RESET", email, returnOobLink=True)
    assert_error(resp, "INSUFFICIENT_PERMISSION")
    time.sleep(1)
    assert srv.mail_count(email) == 0
    assert outbox_rows(srv, email) == []


@pytest.mark.parametrize("token", ["wrong-token", "owner", ""], ids=["wrong", "owner", "empty"])
def test_admin_calls_refuse_a_bad_bearer_token(server, token):
    # adminToken "" (the default) must not make an empty bearer token valid.
    srv = server(server={"adminToken": ""} if token == "" else {})
    email = unique_email("admintoken")
    srv.sign_up(email, PASSWORD)
    for method, body in [
        ("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": email, "returnOobLink": True}),
        ("accounts:lookup", {"email": [email]}),
        ("accounts", {"email": unique_email("created"), "password": PASSWORD}),
    ]:
        resp = srv.admin(method, body, token=token)
        assert resp.status_code in (400, 401, 403), f"{method}: {resp.status_code} {resp.text}"
        assert resp.json()["error"]["code"] == resp.status_code, resp.text
        assert "oobCode" not in resp.text and "users" not in resp.text, resp.text
    assert row_count(srv.db_path, "accounts") == 1


def test_bearer_owner_is_accepted_when_allowed(server):
    srv = server(server={"allowEmulatorOwner": True})
    email = unique_email("owner")
    srv.sign_up(email, PASSWORD)
    body = ok(srv.admin("accounts:sendOobCode",
                        {"requestType": "PASSWORD_RESET", "email": email, "returnOobLink": True}, token="owner"))
    assert body["oobCode"]
    assert ok(srv.admin("accounts:lookup", {"email": [email]}, token="owner"))["users"]


def test_admin_only_user_management_refuses_an_api_key(server):
    srv = server()
    email = unique_email("victim")
    local_id = srv.sign_up(email, PASSWORD)["localId"]
    # lookup by localId / email, create, update and delete are admin-only.
    for body in ({"localId": [local_id]}, {"email": [email]}):
        resp = srv.post("accounts:lookup", body)
        assert 400 <= resp.status_code < 500 and local_id not in resp.text, resp.text
    resp = srv.post("accounts:update", {"localId": local_id, "password": "hijacked-123"})
    assert 400 <= resp.status_code < 500, resp.text
    resp = srv.post("accounts:delete", {"localId": local_id})
    assert 400 <= resp.status_code < 500, resp.text
    resp = srv.post("accounts", {"email": unique_email("made"), "password": PASSWORD}, prefix=f"/v1/projects/{PROJECT}/")
    assert 400 <= resp.status_code < 500, resp.text
    assert ok(srv.sign_in(email, PASSWORD))["localId"] == local_id
    assert row_count(srv.db_path, "accounts") == 1


# --------------------------------------------------------------------------- sendOobCode
def test_password_reset_is_queued_and_mailed(server):
    srv = server()
    email = unique_email("reset")
    srv.sign_up(email, PASSWORD)
    resp = srv.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE)
    assert ok(resp) == {"kind": KIND["sendOobCode"], "email": email}
    [item] = srv.mail_to(email)
    check_web_link(action_link(item["message"]), "resetPassword")


def test_no_worker_queues_without_sending(server):
    srv = server("--no-worker")
    email = unique_email("queued")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    time.sleep(1.5)
    assert srv.capture.received_count == 0
    [row] = outbox_rows(srv, email)
    assert row.get("state", "queued") == "queued", row


def test_return_oob_link_answers_the_code_and_sends_nothing(server):
    srv = server()
    email = unique_email("oob")
    srv.sign_up(email, PASSWORD)
    body = srv.oob("PASSWORD_RESET", email, continueUrl=CONTINUE)
    assert set(body) == {"kind", "email", "oobCode", "oobLink"}, body
    assert body["kind"] == KIND["sendOobCode"] and body["email"] == email
    params = check_web_link(body["oobLink"], "resetPassword")
    assert params["oobCode"] == body["oobCode"]
    time.sleep(1)
    assert srv.capture.received_count == 0
    assert outbox_rows(srv, email) == []


def test_locale_header_sets_link_lang_and_template_language(server):
    srv = server()
    email = unique_email("polski")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE, headers={"X-Firebase-Locale": "pl"}))
    [item] = srv.mail_to(email)
    subject = str(item["message"]["Subject"])
    assert re.search(POLISH_LETTERS, subject), f"subject is not Polish: {subject!r}"
    check_web_link(action_link(item["message"]), "resetPassword", lang="pl")

    body = srv.oob("VERIFY_EMAIL", email, headers={"X-Firebase-Locale": "pl"})
    check_web_link(body["oobLink"], "verifyEmail", lang="pl", continue_url=None)


def test_email_sign_in_needs_no_account(server):
    srv = server()
    email = unique_email("newcomer")
    resp = srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True)
    assert ok(resp) == {"kind": KIND["sendOobCode"], "email": email}
    [item] = srv.mail_to(email)
    link = action_link(item["message"])
    assert parse_link(link)["params"]["mode"] == "signIn"
    assert srv.admin_user(email) is None, "sending a sign-in link creates no account"


def test_email_sign_in_needs_a_continue_url(server):
    srv = server()
    resp = srv.send_oob("EMAIL_SIGNIN", unique_email("nocont"), canHandleCodeInApp=True)
    assert_error(resp, "MISSING_CONTINUE_URI")


def test_email_sign_in_needs_can_handle_code_in_app(server):
    srv = server()
    email = unique_email("nohandle")
    resp = srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=False)
    assert_envelope(resp)
    resp = srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE)
    assert_envelope(resp)


@pytest.mark.parametrize("fields, code", [
    ({"continueUrl": "https://evil.example/finish"}, "UNAUTHORIZED_DOMAIN"),
    ({"continueUrl": "https://app.example.com.evil.example/"}, "UNAUTHORIZED_DOMAIN"),
    ({"continueUrl": "not a url"}, "INVALID_CONTINUE_URI"),
    ({"continueUrl": "javascript:alert(1)"}, "INVALID_CONTINUE_URI"),
    ({"continueUrl": CONTINUE, "androidInstallApp": True}, "MISSING_ANDROID_PACKAGE_NAME"),
    ({"continueUrl": CONTINUE, "androidMinimumVersion": "12"}, "MISSING_ANDROID_PACKAGE_NAME"),
    ({"continueUrl": CONTINUE, "androidMinimumVersionCode": "12"}, "MISSING_ANDROID_PACKAGE_NAME"),
    ({"continueUrl": CONTINUE, "iOSAppStoreId": "123456"}, "MISSING_IOS_BUNDLE_ID"),
    ({"continueUrl": CONTINUE, "linkDomain": "links.evil.example", "canHandleCodeInApp": True},
     "INVALID_HOSTING_LINK_DOMAIN"),
    ({"continueUrl": CONTINUE, "linkDomain": ""}, "INVALID_HOSTING_LINK_DOMAIN"),
    ({"continueUrl": CONTINUE, "dynamicLinkDomain": "example.page.link"}, "INVALID_DYNAMIC_LINK_DOMAIN"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_action_code_settings_errors(server, fields, code):
    srv = server()
    email = unique_email("settings")
    srv.sign_up(email, PASSWORD)
    assert_error(srv.send_oob("PASSWORD_RESET", email, **fields), code)
    assert_error(srv.admin("accounts:sendOobCode",
                           {"requestType": "PASSWORD_RESET", "email": email, "returnOobLink": True, **fields}),
                 code)
    time.sleep(0.5)
    assert srv.mail_count(email) == 0


def test_invalid_email_and_missing_request_type(server):
    srv = server()
    assert_error(srv.send_oob("PASSWORD_RESET", "not-an-email"), "INVALID_EMAIL")
    assert_error(srv.send_oob("EMAIL_SIGNIN", "two@@x.test", continueUrl=CONTINUE, canHandleCodeInApp=True),
                 "INVALID_EMAIL")
    assert_error(srv.post("accounts:sendOobCode", {"email": unique_email("noreq")}), "MISSING_REQ_TYPE")
    assert_envelope(srv.send_oob("NOT_A_TYPE", unique_email("badreq")))


def test_every_action_code_setting_is_accepted(server):
    srv = server()
    email = unique_email("allfields")
    body = srv.oob(
        "EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True,
        iOSBundleId="com.example.ios", iOSAppStoreId="123456", androidPackageName="com.example.android",
        androidInstallApp=True, androidMinimumVersionCode="12", linkDomain="app.example.com",
        targetProjectId=PROJECT, clientType="CLIENT_TYPE_WEB",
    )
    link = body["oobLink"]
    assert link.startswith("https://app.example.com/__/auth/links?link="), link
    params = check_web_link(link, "signIn")
    assert params["oobCode"] == body["oobCode"]
    # The JS SDK's spelling and the Admin SDKs' spelling both work.
    ok(srv.admin("accounts:sendOobCode", {
        "requestType": "EMAIL_SIGNIN", "email": email, "returnOobLink": True, "continueUrl": CONTINUE,
        "canHandleCodeInApp": True, "androidPackageName": "com.example.android", "androidMinimumVersion": "12",
    }))


# --------------------------------------------------------------------------- verify email / change email
def test_verify_email_by_id_token_goes_to_the_accounts_address(server):
    srv = server()
    email = unique_email("verify")
    account = srv.sign_up(email, PASSWORD)
    resp = srv.send_oob("VERIFY_EMAIL", idToken=account["idToken"], continueUrl=CONTINUE)
    assert ok(resp) == {"kind": KIND["sendOobCode"], "email": email}
    [item] = srv.mail_to(email)
    code = code_of(action_link(item["message"]))
    check_web_link(action_link(item["message"]), "verifyEmail")

    applied = ok(srv.post("accounts:update", {"oobCode": code}))
    assert applied["kind"] == KIND["update"]
    assert applied["localId"] == account["localId"]
    assert applied["email"] == email
    assert applied["emailVerified"] is True
    [user] = ok(srv.lookup(account["idToken"]))["users"]
    assert user["emailVerified"] is True


def test_verify_email_with_a_bad_id_token_is_invalid_id_token(server):
    srv = server()
    assert_error(srv.send_oob("VERIFY_EMAIL", idToken="not.a.token"), "INVALID_ID_TOKEN")


def test_verify_email_by_email_is_for_admins_and_needs_an_account(server):
    srv = server()
    assert_error(srv.admin("accounts:sendOobCode", {"requestType": "VERIFY_EMAIL", "email": unique_email("ghost"),
                                                    "returnOobLink": True}), "USER_NOT_FOUND")
    email = unique_email("known")
    srv.sign_up(email, PASSWORD)
    body = srv.oob("VERIFY_EMAIL", email)
    check_web_link(body["oobLink"], "verifyEmail", continue_url=None)


def test_verify_and_change_email_goes_to_the_new_address_and_applies(server):
    srv = server()
    old, new = unique_email("old"), unique_email("new")
    account = srv.sign_up(old, PASSWORD)
    resp = srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=new,
                        continueUrl=CONTINUE)
    assert ok(resp)["kind"] == KIND["sendOobCode"]
    [item] = srv.mail_to(new)
    assert srv.mail_count(old) == 0
    link = action_link(item["message"])
    check_web_link(link, "verifyAndChangeEmail")

    applied = ok(srv.post("accounts:update", {"oobCode": code_of(link)}))
    assert applied["localId"] == account["localId"]
    assert applied["email"] == new and applied["emailVerified"] is True
    assert ok(srv.sign_in(new, PASSWORD))["localId"] == account["localId"]
    assert_error(srv.sign_in(old, PASSWORD), "INVALID_LOGIN_CREDENTIALS")


def test_verify_and_change_email_to_a_taken_address_is_email_exists(server):
    srv = server(server={"enumerationProtection": False})
    mine, taken = unique_email("mine"), unique_email("taken")
    account = srv.sign_up(mine, PASSWORD)
    srv.sign_up(taken, PASSWORD)
    resp = srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=taken)
    assert_error(resp, "EMAIL_EXISTS")


def test_change_to_a_taken_address_reveals_nothing_under_enumeration_protection(server):
    """Firebase: with protection on, a change email goes out only if the new address is free,
    and the answer does not say which."""
    srv = server()
    mine, taken, free = unique_email("mine"), unique_email("taken"), unique_email("free")
    account = srv.sign_up(mine, PASSWORD)
    srv.sign_up(taken, PASSWORD)
    to_taken = srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=taken)
    to_free = srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=free)
    assert to_taken.status_code == to_free.status_code == 200, (to_taken.text, to_free.text)
    assert to_taken.json().keys() == to_free.json().keys()
    srv.mail_to(free)
    assert [m for m in srv.capture.messages() if taken in m["rcpt_tos"]] == []


# --------------------------------------------------------------------------- enumeration protection
def test_reset_for_an_unknown_email_looks_the_same_and_sends_nothing(server):
    srv = server()
    known, unknown = unique_email("known"), unique_email("unknown")
    srv.sign_up(known, PASSWORD)
    a = srv.send_oob("PASSWORD_RESET", known, continueUrl=CONTINUE)
    b = srv.send_oob("PASSWORD_RESET", unknown, continueUrl=CONTINUE)
    assert a.status_code == b.status_code == 200, (a.text, b.text)
    assert ok(a) == {"kind": KIND["sendOobCode"], "email": known}
    assert ok(b) == {"kind": KIND["sendOobCode"], "email": unknown}
    srv.mail_to(known)
    time.sleep(1)
    assert srv.mail_count(unknown) == 0
    assert outbox_rows(srv, unknown) == []


def test_repeat_reset_for_an_unknown_email_is_throttled_like_a_known_one(server):
    """Otherwise the cooldown answer would reveal which addresses have accounts."""
    srv = server()
    known, unknown = unique_email("known"), unique_email("unknown")
    srv.sign_up(known, PASSWORD)
    for email in (known, unknown):
        ok(srv.send_oob("PASSWORD_RESET", email))
        assert_error(srv.send_oob("PASSWORD_RESET", email), "TOO_MANY_ATTEMPTS_TRY_LATER")


def test_reset_for_an_unknown_email_without_protection_is_email_not_found(server):
    srv = server(server={"enumerationProtection": False})
    assert_error(srv.send_oob("PASSWORD_RESET", unique_email("nobody")), "EMAIL_NOT_FOUND")


# --------------------------------------------------------------------------- throttling
def test_second_request_within_the_cooldown_is_too_many_attempts(server):
    srv = server()
    email, other = unique_email("cool"), unique_email("other")
    account = srv.sign_up(email, PASSWORD)
    srv.sign_up(other, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    assert_error(srv.send_oob("PASSWORD_RESET", email), "TOO_MANY_ATTEMPTS_TRY_LATER")
    assert_error(srv.send_oob("PASSWORD_RESET", email.upper()), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Per recipient and action: another action or another address is not held back.
    ok(srv.send_oob("VERIFY_EMAIL", idToken=account["idToken"]))
    ok(srv.send_oob("PASSWORD_RESET", other))
    srv.mail_to(email, count=2)
    time.sleep(1)
    assert srv.mail_count(email) == 2, "one reset and one verification, no second reset"


def test_cooldown_is_configurable_and_ends(server):
    srv = server(policy={"cooldown": "1s"})
    email = unique_email("cool1")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    assert_error(srv.send_oob("PASSWORD_RESET", email), "TOO_MANY_ATTEMPTS_TRY_LATER")
    time.sleep(1.5)
    ok(srv.send_oob("PASSWORD_RESET", email))
    srv.mail_to(email, count=2)


def test_daily_cap_per_recipient_and_action(server):
    srv = server(policy={"cooldown": "10ms", "dailyCap": 2})
    email = unique_email("cap")
    srv.sign_up(email, PASSWORD)
    for _ in range(2):
        ok(srv.send_oob("PASSWORD_RESET", email))
        time.sleep(0.1)
    assert_error(srv.send_oob("PASSWORD_RESET", email), "TOO_MANY_ATTEMPTS_TRY_LATER")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))


def test_admin_links_are_not_throttled(server):
    srv = server()
    email = unique_email("adminlinks")
    srv.sign_up(email, PASSWORD)
    codes = {srv.oob("PASSWORD_RESET", email)["oobCode"] for _ in range(3)}
    assert len(codes) == 3


# --------------------------------------------------------------------------- createAuthUri
def test_create_auth_uri_reveals_nothing_with_enumeration_protection(server):
    srv = server()
    known = unique_email("known")
    srv.sign_up(known, PASSWORD)
    for email in (known, unique_email("unknown")):
        body = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
        assert set(body) == {"kind", "sessionId"}, body
        assert body["kind"] == KIND["createAuthUri"] and body["sessionId"]


def test_create_auth_uri_lists_sign_in_methods_without_protection(server):
    srv = server(server={"enumerationProtection": False})
    password_user, link_user, nobody = unique_email("pw"), unique_email("link"), unique_email("nobody")
    srv.sign_up(password_user, PASSWORD)
    code = srv.oob("EMAIL_SIGNIN", link_user, continueUrl=CONTINUE, canHandleCodeInApp=True)["oobCode"]
    ok(srv.post("accounts:signInWithEmailLink", {"email": link_user, "oobCode": code}))

    def methods(email: str) -> dict:
        return ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))

    body = methods(password_user)
    assert body["kind"] == KIND["createAuthUri"]
    assert body["registered"] is True and body["signinMethods"] == ["password"], body
    body = methods(link_user)
    assert body["registered"] is True and body["signinMethods"] == ["emailLink"], body
    body = methods(nobody)
    assert body["registered"] is False and body.get("signinMethods", []) == [], body


# --------------------------------------------------------------------------- sign-up, sign-in, lookup
def test_sign_up_and_sign_in_with_password(server):
    srv = server()
    email = unique_email("signup")
    body = srv.sign_up(email, PASSWORD, displayName="Zoë")
    assert body["kind"] == KIND["signUp"] and body["email"] == email and body["localId"]
    assert is_jwt(body["idToken"]) and body["refreshToken"] and body["expiresIn"] == "3600"

    signed_in = ok(srv.sign_in(email, PASSWORD))
    assert signed_in["kind"] == KIND["signInWithPassword"]
    assert signed_in["localId"] == body["localId"] and signed_in["email"] == email
    assert signed_in["registered"] is True and is_jwt(signed_in["idToken"]) and signed_in["refreshToken"]
    assert signed_in["expiresIn"] == "3600"


def test_sign_up_errors(server):
    srv = server()
    email = unique_email("dup")
    srv.sign_up(email, PASSWORD)
    assert_error(srv.post("accounts:signUp", {"email": email, "password": PASSWORD}), "EMAIL_EXISTS")
    assert_error(srv.post("accounts:signUp", {"email": email.upper(), "password": PASSWORD}), "EMAIL_EXISTS")
    assert_error(srv.post("accounts:signUp", {"email": unique_email("weak"), "password": "12345"}), "WEAK_PASSWORD")


def test_wrong_password_and_unknown_email_are_the_same_error(server):
    srv = server()
    email = unique_email("login")
    srv.sign_up(email, PASSWORD)
    assert_error(srv.sign_in(email, "wrong-password"), "INVALID_LOGIN_CREDENTIALS")
    assert_error(srv.sign_in(unique_email("nobody"), PASSWORD), "INVALID_LOGIN_CREDENTIALS")


def test_lookup_by_id_token(server):
    srv = server()
    email = unique_email("lookup")
    account = srv.sign_up(email, PASSWORD, displayName="Ada")
    body = ok(srv.lookup(account["idToken"]))
    assert body["kind"] == KIND["lookup"]
    [user] = body["users"]
    assert user["localId"] == account["localId"] and user["email"] == email
    assert user["emailVerified"] is False and user["disabled"] is False
    assert user.get("displayName") == "Ada"
    for key in ("validSince", "createdAt", "lastLoginAt"):
        assert int(user[key]) > 0, (key, user)
    assert isinstance(user["providerUserInfo"], list)
    assert PASSWORD not in json.dumps(user)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_lookup_rejects_bad_and_forged_tokens(server):
    srv = server()
    victim = srv.sign_up(unique_email("victim"), PASSWORD)
    attacker = srv.sign_up(unique_email("attacker"), PASSWORD)
    assert_error(srv.lookup("garbage"), "INVALID_ID_TOKEN")

    header, payload, signature = attacker["idToken"].split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert_error(srv.lookup(f"{header}.{payload}.{flipped}"), "INVALID_ID_TOKEN")

    claims = json.loads(_unb64(payload))
    for key in ("sub", "user_id", "uid"):
        if key in claims:
            claims[key] = victim["localId"]
    forged_payload = _b64(json.dumps(claims).encode())
    assert_error(srv.lookup(f"{header}.{forged_payload}.{signature}"), "INVALID_ID_TOKEN")
    none_header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    assert_error(srv.lookup(f"{none_header}.{forged_payload}."), "INVALID_ID_TOKEN")


def test_admin_lookup_by_local_id_and_email(server):
    srv = server()
    email = unique_email("adminlookup")
    local_id = srv.sign_up(email, PASSWORD)["localId"]
    for body in ({"localId": [local_id]}, {"email": [email]}):
        users = ok(srv.admin("accounts:lookup", body))["users"]
        assert [u["localId"] for u in users] == [local_id]
    body = ok(srv.admin("accounts:lookup", {"email": [unique_email("nobody")]}))
    assert "users" not in body, body
    assert body["kind"] == KIND["lookup"]


# --------------------------------------------------------------------------- admin user management
def test_admin_creates_updates_disables_and_deletes_users(server):
    srv = server()
    email = unique_email("managed")
    created = ok(srv.admin("accounts", {"email": email, "password": PASSWORD, "displayName": "Grace",
                                        "emailVerified": True}))
    local_id = created["localId"]
    assert local_id
    user = srv.admin_user(email)
    assert user["localId"] == local_id and user["displayName"] == "Grace" and user["emailVerified"] is True
    assert ok(srv.sign_in(email, PASSWORD))["localId"] == local_id
    assert_error(srv.admin("accounts", {"email": email, "password": PASSWORD}), "EMAIL_EXISTS")

    ok(srv.admin("accounts:update", {"localId": local_id, "displayName": "Grace H.", "emailVerified": False,
                                     "password": "brand-new-pw"}))
    user = srv.admin_user(email)
    assert user["displayName"] == "Grace H." and user["emailVerified"] is False
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")
    ok(srv.sign_in(email, "brand-new-pw"))

    ok(srv.admin("accounts:update", {"localId": local_id, "disableUser": True}))
    assert srv.admin_user(email)["disabled"] is True
    assert_error(srv.sign_in(email, "brand-new-pw"), "USER_DISABLED")

    deleted = ok(srv.admin("accounts:delete", {"localId": local_id}))
    assert deleted.get("kind"), "firebase-admin requires `kind` in the delete answer"
    assert srv.admin_user(email) is None
    assert_error(srv.sign_in(email, "brand-new-pw"), "INVALID_LOGIN_CREDENTIALS")


def test_admin_update_of_an_unknown_user_is_user_not_found(server):
    srv = server()
    assert_error(srv.admin("accounts:update", {"localId": "no-such-uid", "displayName": "x"}), "USER_NOT_FOUND")
    assert_error(srv.admin("accounts:delete", {"localId": "no-such-uid"}), "USER_NOT_FOUND")


# --------------------------------------------------------------------------- malformed input
BAD_BODIES = {
    "not-json": b"{not json",
    "truncated": b'{"requestType": "PASSWORD_RESET", "email": ',
    "array": b"[]",
    "string": b'"PASSWORD_RESET"',
    "null": b"null",
    "empty": b"",
    "invalid-utf8": b'{"requestType": "PASSWORD_RESET", "email": "\xff\xfe@x.test"}',
    "number-type": b'{"requestType": 5, "email": "a@x.test"}',
    "email-number": b'{"requestType": "PASSWORD_RESET", "email": 123}',
    "bool-as-string": b'{"requestType": "EMAIL_SIGNIN", "email": "a@x.test", "continueUrl": "https://app.example.com/",'
                      b' "canHandleCodeInApp": "yes"}',
    "object-for-string": b'{"requestType": {"x": 1}, "email": "a@x.test"}',
    "unknown-field": b'{"requestType": "PASSWORD_RESET", "email": "a@x.test", "bogusField": 1}',
    "deep-nesting": b'{"requestType": "PASSWORD_RESET", "email": "a@x.test", "continueUrl": '
                    + b"[" * 20000 + b"]" * 20000 + b"}",
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_malformed_bodies_get_a_400_envelope(server, name):
    srv = server()
    resp = srv.post("accounts:sendOobCode", data=BAD_BODIES[name], headers={"Content-Type": "application/json"})
    assert_envelope(resp, 400)
    # ...and the server is still fine.
    ok(srv.post("accounts:signUp", {"email": unique_email("alive"), "password": PASSWORD}))


@pytest.mark.parametrize("method, body", [
    ("accounts:signUp", {"email": "u@x.test", "password": PASSWORD, "favouriteColour": "blue"}),
    ("accounts:signUp", {"email": "u@x.test", "password": 123456}),
    ("accounts:signInWithPassword", {"email": ["u@x.test"], "password": PASSWORD}),
    ("accounts:resetPassword", {"oobCode": 42}),
    ("accounts:update", {"oobCode": "x", "surprise": True}),
    ("accounts:signInWithEmailLink", {"email": "u@x.test", "oobCode": None, "extra": 1}),
    ("accounts:createAuthUri", {"identifier": True, "continueUri": "http://localhost"}),
    ("accounts:lookup", {"idToken": {"nested": "object"}}),
])
def test_wrong_types_and_unknown_fields_on_every_method(server, method, body):
    srv = server()
    assert_envelope(srv.post(method, body), 400)
    assert row_count(srv.db_path, "accounts") == 0


def test_body_size_limit_is_enforced_and_configurable(server):
    srv = server(server={"maxBodyBytes": 4096})
    small = json.dumps({"email": unique_email("small"), "password": PASSWORD}).encode() + b" " * 3000
    ok(srv.post("accounts:signUp", data=small, headers={"Content-Type": "application/json"}))
    big = json.dumps({"email": unique_email("big"), "password": PASSWORD}).encode() + b" " * 5000
    assert_envelope(srv.post("accounts:signUp", data=big, headers={"Content-Type": "application/json"}), 400)

    def chunks():  # no Content-Length: the limit must hold for a streamed body too
        yield b'{"email": "' + unique_email("chunked").encode() + b'", "password": "' + PASSWORD.encode() + b'"'
        for _ in range(10):
            yield b" " * 1000
        yield b"}"

    resp = requests.post(f"{srv.url}/v1/accounts:signUp", params={"key": API_KEY}, data=chunks(),
                         headers={"Content-Type": "application/json"}, timeout=HTTP_TIMEOUT)
    assert_envelope(resp, 400)
    assert row_count(srv.db_path, "accounts") == 1
    ok(srv.post("accounts:signUp", {"email": unique_email("after"), "password": PASSWORD}))


def test_default_body_limit_is_64_kib(server):
    srv = server()
    big = json.dumps({"email": unique_email("huge"), "password": PASSWORD}).encode() + b" " * 70000
    assert_envelope(srv.post("accounts:signUp", data=big, headers={"Content-Type": "application/json"}), 400)

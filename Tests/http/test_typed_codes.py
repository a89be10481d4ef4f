"""Codes to type beside links (`policy.typedCodes`, `codes:redeemTyped`): the code in the mail, typed right,
wrong, too often, late, after its link, from another client, for each action; against a real capture SMTP server.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
import requests

from helpers import action_link, html_part, text_part
from http_support import ADMIN_TOKEN, CONTINUE, HTTP_TIMEOUT, assert_error, code_of, is_jwt, ok, unique_email

PASSWORD = "first-password-1"
NEW_PASSWORD = "second-password-2"
CODE_LINE = re.compile(r"^    (\S+)\r?$", re.MULTILINE)


def typed_code(message) -> str:
    """The code of a mail: on its own indented line in the text part, and the same, large, in the HTML part."""
    codes = CODE_LINE.findall(text_part(message))
    assert len(codes) == 1, text_part(message)
    html = html_part(message)
    assert f">{codes[0]}</span>" in html and "font-size: 28px" in html, html
    return codes[0]


def mail_code(srv, email: str, count: int = 1) -> tuple[str, str]:
    """The typed code and the link's code of the `count`th mail to `email`."""
    message = srv.mail_to(email, count=count)[count - 1]["message"]
    return typed_code(message), code_of(action_link(message))


def redeem(srv, request_type: str, email: str, code: str, **extra):
    return srv.post("codes:redeemTyped", {"requestType": request_type, "email": email, "code": code, **extra})


def ledger(srv, sql: str, *args):
    with sqlite3.connect(srv.db_path) as db:
        return db.execute(sql, args).fetchall()


def wrong(code: str) -> str:
    """Another code of the same shape."""
    return "".join(str((int(c) + 1) % 10) for c in code)


def test_a_sign_in_code_signs_in_once_and_spends_its_link(server):
    srv = server(policy={"typedCodes": "sign-in"})
    email = unique_email("typed-in")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    code, link_code = mail_code(srv, email)
    assert re.fullmatch(r"[0-9]{6}", code), code

    body = ok(redeem(srv, "EMAIL_SIGNIN", email, f" {code[:3]}-{code[3:]} "))  # as people type it
    assert is_jwt(body["idToken"]) and body["isNewUser"] is True and body["email"] == email, body
    assert body["kind"] == "identitytoolkit#EmailLinkSigninResponse"

    assert_error(redeem(srv, "EMAIL_SIGNIN", email, code), "INVALID_OOB_CODE")
    assert_error(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": link_code}), "INVALID_OOB_CODE")
    [(typed_hash, redeemed_with)] = ledger(
        srv, "SELECT typed_hash, redeemed_with FROM action_codes WHERE email = ? AND redeemed_at IS NOT NULL", email)
    assert redeemed_with == "typed" and len(typed_hash) == 32 and code.encode() not in typed_hash


def audit(srv, email: str) -> list[dict]:
    reply = requests.get(f"{srv.url}/admin/audit", params={"email": email}, timeout=HTTP_TIMEOUT,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert reply.status_code == 200, reply.text
    return [json.loads(line) for line in reply.text.splitlines()]


def test_the_link_spends_the_code_and_the_audit_tells_typed_from_clicked(server):
    srv = server(policy={"typedCodes": "sign-in", "cooldown": "0s"})
    clicked, typed = unique_email("typed-link"), unique_email("typed-typed")
    for email in (clicked, typed):
        ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    code, link_code = mail_code(srv, clicked)
    ok(srv.post("accounts:signInWithEmailLink", {"email": clicked, "oobCode": link_code}))
    assert_error(redeem(srv, "EMAIL_SIGNIN", clicked, code), "INVALID_OOB_CODE")
    assert ledger(srv, "SELECT redeemed_with FROM action_codes WHERE email = ?", clicked) == [("link",)]
    ok(redeem(srv, "EMAIL_SIGNIN", typed, mail_code(srv, typed)[0]))
    assert [row["redeemedWith"] for row in audit(srv, clicked)] == ["link"]
    assert [row["redeemedWith"] for row in audit(srv, typed)] == ["typed"]


def mail_for(srv, request_type: str, tag: str) -> tuple[str, dict]:
    """Asks for `request_type`'s mail with a code; the address it went to, and how its link is redeemed."""
    email = unique_email(tag)
    if request_type == "EMAIL_SIGNIN":
        ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
        return email, {"method": "accounts:signInWithEmailLink", "body": {"email": email}}
    token = srv.sign_up(email, PASSWORD)["idToken"]
    if request_type == "PASSWORD_RESET":
        ok(srv.send_oob("PASSWORD_RESET", email))
        return email, {"method": "accounts:resetPassword", "body": {"newPassword": NEW_PASSWORD}}
    if request_type == "VERIFY_EMAIL":
        ok(srv.send_oob("VERIFY_EMAIL", idToken=token))
        return email, {"method": "accounts:update", "body": {}}
    new_email = unique_email(tag + "-new")
    ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=token, newEmail=new_email))
    return new_email, {"method": "accounts:update", "body": {}}


ACTIONS = ["EMAIL_SIGNIN", "VERIFY_EMAIL", "PASSWORD_RESET", "VERIFY_AND_CHANGE_EMAIL"]


@pytest.mark.parametrize("request_type", ACTIONS)
def test_five_wrong_tries_kill_the_code_but_not_its_link(server, request_type):
    srv = server(policy={"typedCodes": "all"})
    email, link = mail_for(srv, request_type, "typed-wrong")
    code, link_code = mail_code(srv, email)
    extra = {"newPassword": NEW_PASSWORD} if request_type == "PASSWORD_RESET" else {}
    for attempt in range(5):
        assert_error(redeem(srv, request_type, email, wrong(code), **extra), "INVALID_OOB_CODE")
    assert ledger(srv, "SELECT typed_tries FROM action_codes WHERE typed_hash IS NOT NULL") == [(5,)]
    # The right code after five wrong ones: dead, so a guesser gets five tries per mail and no more.
    assert_error(redeem(srv, request_type, email, code, **extra), "INVALID_OOB_CODE")
    ok(srv.post(link["method"], {**link["body"], "oobCode": link_code}))
    rejected = [e for e in srv.events("rejected") if e["detail"] == "WRONG_TYPED_CODE"]
    assert len(rejected) == 5


@pytest.mark.parametrize("request_type", ACTIONS)
def test_a_used_link_spends_the_code_and_an_expired_code_is_expired(server, request_type):
    srv = server(policy={"typedCodes": "all"})
    email, link = mail_for(srv, request_type, "typed-spent")
    code, link_code = mail_code(srv, email)
    extra = {"newPassword": NEW_PASSWORD} if request_type == "PASSWORD_RESET" else {}
    ok(srv.post(link["method"], {**link["body"], "oobCode": link_code}))
    assert_error(redeem(srv, request_type, email, code, **extra), "INVALID_OOB_CODE")

    late = server(policy={"typedCodes": "all"}, links={"lifetime": {"signIn": "1s", "verifyEmail": "1s",
                                                                    "resetPassword": "1s", "verifyAndChangeEmail": "1s"}})
    email, _ = mail_for(late, request_type, "typed-late")
    code, _ = mail_code(late, email)
    time.sleep(2)
    assert_error(redeem(late, request_type, email, code, **extra), "EXPIRED_OOB_CODE")


def test_only_the_newest_mail_code_counts(server):
    srv = server(policy={"typedCodes": "sign-in", "cooldown": "0s"})
    email = unique_email("typed-newest")
    for _ in range(2):
        ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    first, _ = mail_code(srv, email, count=1)
    second, _ = mail_code(srv, email, count=2)
    if first != second:
        assert_error(redeem(srv, "EMAIL_SIGNIN", email, first), "INVALID_OOB_CODE")
    ok(redeem(srv, "EMAIL_SIGNIN", email, second))


def test_a_bound_code_is_typed_only_with_its_session(server):
    srv = server(policy={"typedCodes": "request"})
    email = unique_email("typed-bound")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True, typedCodeSessionId="device-1"))
    code, _ = mail_code(srv, email)
    assert_error(redeem(srv, "EMAIL_SIGNIN", email, code), "INVALID_OOB_CODE")
    assert_error(redeem(srv, "EMAIL_SIGNIN", email, code, sessionId="device-2"), "INVALID_OOB_CODE")
    ok(redeem(srv, "EMAIL_SIGNIN", email, code, sessionId="device-1"))
    settings = ledger(srv, "SELECT settings FROM outbox WHERE recipient = ?", email)[0][0]
    assert "device-1" not in settings  # only its hash


def test_policy_request_mails_a_code_only_when_asked(server):
    srv = server(policy={"typedCodes": "request", "cooldown": "0s"})
    email = unique_email("typed-ask")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True, typedCode=True))
    plain, asked = (m["message"] for m in srv.mail_to(email, count=2))
    assert not CODE_LINE.findall(text_part(plain)) and "font-size: 28px" not in html_part(plain)
    ok(redeem(srv, "EMAIL_SIGNIN", email, typed_code(asked)))


def test_typed_codes_off_refuses_a_request_for_one(server):
    srv = server()
    email = unique_email("typed-off")
    assert_error(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True, typedCode=True),
                 "OPERATION_NOT_ALLOWED")
    assert_error(redeem(srv, "EMAIL_SIGNIN", email, "123456"), "OPERATION_NOT_ALLOWED")


def test_verify_email_reset_password_and_change_email_by_typed_code(server):
    srv = server(policy={"typedCodes": "all", "cooldown": "0s"})
    email = unique_email("typed-all")
    token = srv.sign_up(email, PASSWORD)["idToken"]

    ok(srv.send_oob("VERIFY_EMAIL", idToken=token))
    code, _ = mail_code(srv, email, count=1)
    body = ok(redeem(srv, "VERIFY_EMAIL", email, code))
    assert body["emailVerified"] is True and body["email"] == email, body

    ok(srv.send_oob("PASSWORD_RESET", email))
    code, _ = mail_code(srv, email, count=2)
    assert_error(redeem(srv, "PASSWORD_RESET", email, code, newPassword="short"), "WEAK_PASSWORD")
    body = ok(redeem(srv, "PASSWORD_RESET", email, code, newPassword=NEW_PASSWORD))
    assert body == {"kind": "identitytoolkit#ResetPasswordResponse", "requestType": "PASSWORD_RESET", "email": email}, body
    token = ok(srv.sign_in(email, NEW_PASSWORD))["idToken"]

    new_email = unique_email("typed-moved")
    ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=token, newEmail=new_email))
    code, _ = mail_code(srv, new_email)
    body = ok(redeem(srv, "VERIFY_AND_CHANGE_EMAIL", new_email, code))
    assert body["email"] == new_email and body["emailVerified"] is True, body
    ok(srv.sign_in(new_email, NEW_PASSWORD))


def test_wrong_codes_for_one_address_lock_it_like_failed_sign_ins(server):
    srv = server(policy={"typedCodes": "sign-in", "cooldown": "0s"}, limits={"signInFailuresPerAccount": 3})
    email = unique_email("typed-lock")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    code, _ = mail_code(srv, email)
    for _ in range(3):
        assert_error(redeem(srv, "EMAIL_SIGNIN", email, wrong(code)), "INVALID_OOB_CODE")
    assert_error(redeem(srv, "EMAIL_SIGNIN", email, code), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Another address is not locked.
    other = unique_email("typed-free")
    ok(srv.send_oob("EMAIL_SIGNIN", other, continueUrl=CONTINUE, canHandleCodeInApp=True))
    ok(redeem(srv, "EMAIL_SIGNIN", other, mail_code(srv, other)[0]))


def test_letters_and_length_are_configurable(server):
    srv = server(policy={"typedCodes": "sign-in", "typedCodeLength": 8, "typedCodeAlphabet": "letters"})
    email = unique_email("typed-letters")
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    code, _ = mail_code(srv, email)
    assert re.fullmatch(r"[ACDEFGHJKMNPQRTWXY34679]{8}", code), code
    ok(redeem(srv, "EMAIL_SIGNIN", email, code.lower()))


def test_the_code_page_resets_a_password_on_any_device(server):
    srv = server(policy={"typedCodes": "all"})
    email = unique_email("typed-page")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    code, _ = mail_code(srv, email)

    page = requests.get(f"{srv.url}/__/auth/code", params={"mode": "resetPassword", "lang": "fa"}, timeout=HTTP_TIMEOUT)
    assert page.status_code == 200, page.text
    assert 'dir="rtl"' in page.text and 'autocomplete="one-time-code"' in page.text and 'inputmode="numeric"' in page.text
    assert 'name="newPassword"' in page.text and 'action="/__/auth/code"' in page.text

    form = {"mode": "resetPassword", "lang": "en", "email": email, "code": code, "newPassword": NEW_PASSWORD}
    foreign = requests.post(f"{srv.url}/__/auth/code", data=form, headers={"Origin": "https://evil.example"},
                            timeout=HTTP_TIMEOUT)
    assert foreign.status_code == 403, foreign.text
    wrong_try = requests.post(f"{srv.url}/__/auth/code", data={**form, "code": wrong(code)}, timeout=HTTP_TIMEOUT)
    assert wrong_try.status_code == 400 and "That code is not right" in wrong_try.text, wrong_try.text
    assert 'autocomplete="one-time-code"' in wrong_try.text  # the form again, to try once more
    done = requests.post(f"{srv.url}/__/auth/code", data=form, headers={"Origin": srv.url}, timeout=HTTP_TIMEOUT)
    assert done.status_code == 200 and "Your password has been changed" in done.text, done.text
    ok(srv.sign_in(email, NEW_PASSWORD))


def test_the_code_page_says_codes_are_off_and_never_serves_sign_in(server):
    srv = server()
    off = requests.get(f"{srv.url}/__/auth/code", params={"mode": "verifyEmail"}, timeout=HTTP_TIMEOUT)
    assert off.status_code == 400 and "Codes are not used here" in off.text, off.text
    assert 'name="code"' not in off.text
    srv2 = server(policy={"typedCodes": "all"})
    sign_in = requests.get(f"{srv2.url}/__/auth/code", params={"mode": "signIn"}, timeout=HTTP_TIMEOUT)
    assert sign_in.status_code == 400, sign_in.text


def test_the_console_audit_tells_typed_from_clicked(server):
    srv = server(policy={"typedCodes": "sign-in", "cooldown": "0s"})
    clicked, typed = unique_email("console-link"), unique_email("console-typed")
    for email in (clicked, typed):
        ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    ok(srv.post("accounts:signInWithEmailLink", {"email": clicked, "oobCode": mail_code(srv, clicked)[1]}))
    ok(redeem(srv, "EMAIL_SIGNIN", typed, mail_code(srv, typed)[0]))
    session = requests.Session()
    sign_in = session.get(f"{srv.url}/admin/sign-in", timeout=HTTP_TIMEOUT)
    csrf = re.search(r'name="csrf" value="([^"]+)"', sign_in.text).group(1)
    signed = session.post(f"{srv.url}/admin/sign-in", data={"token": ADMIN_TOKEN, "csrf": csrf}, timeout=HTTP_TIMEOUT,
                          headers={"Cookie": "; ".join(f"{c.name}={c.value}" for c in session.cookies)},
                          allow_redirects=False)
    assert signed.status_code == 303, signed.text
    cookies = {**{c.name: c.value for c in session.cookies}, **signed.cookies.get_dict()}
    page = requests.get(f"{srv.url}/admin/audit/search", params={"action": "sign-in"}, timeout=HTTP_TIMEOUT,
                        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
    assert page.status_code == 200, page.text
    rows = {email: row for row in re.findall(r"<tr>.*?</tr>", page.text, re.S)
            for email in (clicked, typed) if email in row}
    assert "redeemed (link clicked)" in rows[clicked] and "redeemed (code typed)" in rows[typed], page.text

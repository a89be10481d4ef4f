"""Ported from firebase-tools src/emulator/auth/password.spec.ts ("accounts:signInWithPassword").

"Improved email privacy enabled" is Herald's `server.enumerationProtection: true` (the
`emu_protected` server). Skipped there: "should return pending credential if user has MFA" and
"... enabled on tenant projects" (MFA), "should error if auth is disabled", "should error if
password sign up is disabled" (tenants), and every case under "when blocking functions are
present".
"""

from __future__ import annotations

import time

import pytest

from compat_support import (
    FAMILIES, call, decode_jwt, expect_error, expect_ok, get_account_info_by_local_id, register_user, unique_email,
    update_account_by_local_id,
)

PASSWORD = "notasecret"


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("family", FAMILIES)
def test_should_issue_tokens_when_email_and_password_are_valid(emu, family):
    """password.spec.ts: should issue tokens when email and password are valid"""
    email = unique_email("alice")
    local_id = register_user(emu, email, PASSWORD)["localId"]

    body = expect_ok(call(emu, "signInWithPassword", {"email": email, "password": PASSWORD}, family=family))
    assert body["localId"] == local_id
    assert body["email"] == email
    assert body["registered"] is True, body
    assert isinstance(body.get("refreshToken"), str), body

    decoded = decode_jwt(body["idToken"])
    # Difference: Herald signs its tokens (RS256); the emulator's are alg "none".
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    assert decoded["payload"]["user_id"] == local_id
    assert "provider_id" not in decoded["payload"], decoded["payload"]
    assert decoded["payload"]["firebase"]["sign_in_provider"] == "password", decoded["payload"]


def test_should_update_last_login_at_on_successful_login(emu):
    """password.spec.ts: should update lastLoginAt on successful login"""
    email = unique_email("alice")
    # The emulator freezes the clock and compares with Date.now(); here the value must fall
    # within the wall-clock window of the call that set it.
    start = now_ms()
    local_id = register_user(emu, email, PASSWORD)["localId"]
    end = now_ms()
    before_login = get_account_info_by_local_id(emu, local_id)
    assert start - 5 <= int(before_login["lastLoginAt"]) <= end + 5, (start, before_login, end)

    time.sleep(0.05)  # getClock().tick(4000)

    start = now_ms()
    expect_ok(call(emu, "signInWithPassword", {"email": email, "password": PASSWORD}))
    end = now_ms()
    after_login = get_account_info_by_local_id(emu, local_id)
    assert start - 5 <= int(after_login["lastLoginAt"]) <= end + 5, (start, after_login, end)
    assert int(after_login["lastLoginAt"]) > int(before_login["lastLoginAt"])


def test_should_validate_email_address_ignoring_case(emu):
    """password.spec.ts: should validate email address ignoring case"""
    email = unique_email("alice")
    local_id = register_user(emu, email, PASSWORD)["localId"]
    local = email.split("@")[0]
    mixed = local[:1].upper() + local[1:] + "@exAMPle.COM"  # like "AlIcE@exAMPle.COM"
    body = expect_ok(call(emu, "signInWithPassword", {"email": mixed, "password": PASSWORD}))
    assert body["localId"] == local_id


def test_should_error_if_email_or_password_is_missing(emu):
    """password.spec.ts: should error if email or password is missing"""
    expect_error(call(emu, "signInWithPassword", {"password": PASSWORD}), "MISSING_EMAIL")
    expect_error(call(emu, "signInWithPassword", {"email": unique_email("nosuchuser")}), "MISSING_PASSWORD")


def test_should_error_if_email_is_invalid(emu):
    """password.spec.ts: should error if email is invalid"""
    expect_error(call(emu, "signInWithPassword", {"email": "ill-formatted-email", "password": PASSWORD}),
                 "INVALID_EMAIL")
    expect_error(call(emu, "signInWithPassword", {"email": "", "password": PASSWORD}), "INVALID_EMAIL")


def test_should_error_if_email_is_not_found(emu):
    """password.spec.ts: should error if email is not found"""
    expect_error(call(emu, "signInWithPassword", {"email": unique_email("nosuchuser"), "password": PASSWORD}),
                 "EMAIL_NOT_FOUND")


def test_should_error_if_email_is_not_found_with_improved_email_privacy_enabled(emu_protected):
    """password.spec.ts: should error if email is not found with improved email privacy enabled"""
    expect_error(call(emu_protected, "signInWithPassword", {"email": unique_email("nosuchuser"), "password": PASSWORD}),
                 "INVALID_LOGIN_CREDENTIALS")


def test_should_error_if_password_is_wrong(emu):
    """password.spec.ts: should error if password is wrong"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    # Passwords are case sensitive. The uppercase one below doesn't match.
    expect_error(call(emu, "signInWithPassword", {"email": email, "password": "NOTASECRET"}), "INVALID_PASSWORD")


def test_should_error_if_password_is_wrong_with_improved_email_privacy_enabled(emu_protected):
    """password.spec.ts: should error if password is wrong with improved email privacy enabled"""
    email = unique_email("alice")
    register_user(emu_protected, email, PASSWORD)
    expect_error(call(emu_protected, "signInWithPassword", {"email": email, "password": "NOTASECRET"}),
                 "INVALID_LOGIN_CREDENTIALS")


def test_should_error_if_user_is_disabled(emu):
    """password.spec.ts: should error if user is disabled"""
    email = unique_email("alice")
    local_id = register_user(emu, email, PASSWORD)["localId"]
    update_account_by_local_id(emu, local_id, {"disableUser": True})
    expect_error(call(emu, "signInWithPassword", {"email": email, "password": PASSWORD}), "USER_DISABLED")

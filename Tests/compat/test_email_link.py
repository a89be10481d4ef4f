"""Ported from firebase-tools src/emulator/auth/emailLink.spec.ts ("email link sign-in").

Skipped there: "should link existing phone-auth account to new email" (phone), "should return
pending credential if user has MFA" and "... enabled on tenant projects" (MFA), "should error if
auth is disabled", "should error if email link sign in is disabled", "should create account on
sign-in with tenantId" (tenants), and every case under "when blocking functions are present".
"""

from __future__ import annotations

import pytest

from compat_support import (
    FAMILIES, call, create_email_sign_in_oob, decode_jwt, expect_error, expect_ok, get_signin_methods, inspect_oobs,
    register_user, unique_email, update_account_by_local_id,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_send_oob_code_to_new_emails_and_create_account_on_sign_in(emu, family):
    """emailLink.spec.ts: should send OOB code to new emails and create account on sign-in"""
    email = unique_email("alice")
    create_email_sign_in_oob(emu, email, family=family)

    oobs = inspect_oobs(emu, email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == email
    assert oobs[0]["requestType"] == "EMAIL_SIGNIN"

    body = expect_ok(call(emu, "signInWithEmailLink", {"oobCode": oobs[0]["oobCode"], "email": email}, family=family))
    assert isinstance(body.get("idToken"), str), body
    assert body["email"] == email
    assert body["isNewUser"] is True

    decoded = decode_jwt(body["idToken"])
    # Difference: Herald signs its tokens (RS256 with a kid); the emulator's are alg "none".
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    assert isinstance(decoded["header"].get("kid"), str) and decoded["header"]["kid"], decoded["header"]
    assert isinstance(decoded["payload"]["user_id"], str)
    assert "provider_id" not in decoded["payload"], decoded["payload"]
    # The provider name is (confusingly) "password".
    assert decoded["payload"]["firebase"]["sign_in_provider"] == "password", decoded["payload"]

    assert sorted(get_signin_methods(emu, email)) == ["emailLink"]


def test_should_sign_an_existing_account_in_and_enable_email_link_sign_in_for_them(emu):
    """emailLink.spec.ts: should sign an existing account in and enable email-link sign-in for them"""
    email = unique_email("bob")
    user = register_user(emu, email, PASSWORD)
    code = create_email_sign_in_oob(emu, email)["oobCode"]

    body = expect_ok(call(emu, "signInWithEmailLink", {"email": email, "oobCode": code}))
    assert body["localId"] == user["localId"]

    # Adapted (deliberate difference, README): the account's email was unverified, so a password set by
    # someone who never proved they own the address is dropped and its sessions end. The emulator keeps both.
    expect_error(call(emu, "lookup", {"idToken": user["idToken"]}), "TOKEN_EXPIRED")
    body = expect_ok(call(emu, "lookup", {"idToken": body["idToken"]}))
    assert len(body["users"]) == 1, body
    assert body["users"][0].get("emailLinkSignin") is True, body

    assert sorted(get_signin_methods(emu, email)) == ["emailLink"]


def test_should_error_on_invalid_oob_code(emu):
    """emailLink.spec.ts: should error on invalid oobCode"""
    expect_error(call(emu, "signInWithEmailLink", {"email": unique_email("alice"), "oobCode": "invalid"}),
                 "INVALID_OOB_CODE")


def test_should_error_if_user_is_disabled(emu):
    """emailLink.spec.ts: should error if user is disabled"""
    email = unique_email("bob")
    user = register_user(emu, email, PASSWORD)
    code = create_email_sign_in_oob(emu, email)["oobCode"]
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(call(emu, "signInWithEmailLink", {"email": email, "oobCode": code}), "USER_DISABLED")


def test_should_error_if_email_mismatches(emu):
    """emailLink.spec.ts: should error if email mismatches"""
    email = unique_email("alice")
    code = create_email_sign_in_oob(emu, email)["oobCode"]
    expect_error(call(emu, "signInWithEmailLink", {"email": "NOT-" + email, "oobCode": code}),
                 "INVALID_EMAIL : The email provided does not match the sign-in email address.")


def test_should_link_existing_account_with_id_token_to_new_email(emu):
    """emailLink.spec.ts: should link existing account with idToken to new email"""
    old_email, new_email = unique_email("bob"), unique_email("alice")
    user = register_user(emu, old_email, PASSWORD)
    code = create_email_sign_in_oob(emu, new_email)["oobCode"]

    body = expect_ok(call(emu, "signInWithEmailLink", {"email": new_email, "oobCode": code,
                                                       "idToken": user["idToken"]}))
    assert body["localId"] == user["localId"]
    assert body["email"] == new_email

    assert sorted(get_signin_methods(emu, new_email)) == ["emailLink", "password"]
    assert get_signin_methods(emu, old_email) == []


def test_should_error_when_trying_to_link_an_email_already_used_in_another_account(emu):
    """emailLink.spec.ts: should error when trying to link an email already used in another account"""
    # Adapted: the account linking the email is a password account, not a phone-auth one.
    me = register_user(emu, unique_email("carol"), PASSWORD)
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    code = create_email_sign_in_oob(emu, email)["oobCode"]
    expect_error(call(emu, "signInWithEmailLink", {"email": email, "oobCode": code, "idToken": me["idToken"]}),
                 "EMAIL_EXISTS")


def test_should_error_if_user_to_be_linked_is_disabled(emu):
    """emailLink.spec.ts: should error if user to be linked is disabled"""
    email = unique_email("alice")
    user = register_user(emu, email, PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    code = create_email_sign_in_oob(emu, email)["oobCode"]
    expect_error(call(emu, "signInWithEmailLink", {"email": email, "oobCode": code, "idToken": user["idToken"]}),
                 "USER_DISABLED")

"""Ported from firebase-tools src/emulator/auth/signUp.spec.ts ("accounts:signUp").

Adapted: cases that create an anonymous user but are about the email/password rules start from
an email/password user, or create an email/password account (noted per test). Herald's signUp
has no `idToken` (linking) field: "should replace existing email / password in linked account"
goes through accounts:update instead; "should error when idToken is provided but email /
password is not" and "should error if account to be linked is disabled" are not ported.

Skipped there: "should issue idToken and refreshToken on anon signUp", "should ignore displayName
and photoUrl for new anon account", "should error if anonymous user is disabled" (anonymous
users); "should link
email and password to phone sign-in user", "should create new account with phone number when
authenticated", "should error if phone number is invalid" (phone); the multi-factor cases (MFA);
"should error if auth is disabled", "should error if password sign up is not allowed", "should
create new account with tenant info" (tenants); every case under "when blocking functions are
present".
"""

from __future__ import annotations

import pytest

from compat_support import (
    FAMILIES, call, decode_jwt, expect_error, expect_ok, get_account_info_by_id_token, get_signin_methods,
    register_user, sign_in_with_fake_claims, unique_email, unique_sub, update_account_by_local_id,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_throw_error_if_no_email_provided(emu, family):
    """signUp.spec.ts: should throw error if no email provided"""
    expect_error(call(emu, "signUp", {"password": PASSWORD}, family=family), "MISSING_EMAIL")


def test_should_throw_error_if_empty_email_and_password_is_provided(emu):
    """signUp.spec.ts: should throw error if empty email and password is provided"""
    expect_error(call(emu, "signUp", {"email": "", "password": ""}), "INVALID_EMAIL")


@pytest.mark.parametrize("family", FAMILIES)
def test_should_issue_refresh_token_on_email_password_sign_up(emu, family):
    """signUp.spec.ts: should issue refreshToken on email+password signUp"""
    email = unique_email("me")
    body = expect_ok(call(emu, "signUp", {"email": email, "password": PASSWORD}, family=family))
    assert isinstance(body.get("refreshToken"), str), body

    decoded = decode_jwt(body.get("idToken"))
    # Difference: Herald signs its tokens (RS256); the emulator's are alg "none".
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    payload = decoded["payload"]
    assert isinstance(payload["user_id"], str)
    assert "provider_id" not in payload, payload
    assert payload["firebase"]["sign_in_provider"] == "password", payload
    assert payload["firebase"]["identities"] == {"email": [email]}, payload


def test_should_set_display_name_but_ignore_photo_url_for_new_password_account(emu):
    """signUp.spec.ts: should set displayName but ignore photoUrl for new password account"""
    user = {"email": unique_email("me"), "password": PASSWORD, "displayName": "Me",
            "photoUrl": "http://localhost/my-profile.png"}
    body = expect_ok(call(emu, "signUp", user))
    assert body.get("displayName") == user["displayName"], body
    assert "photoUrl" not in body, body
    info = get_account_info_by_id_token(emu, body["idToken"])
    assert info.get("displayName") == user["displayName"], info
    assert "photoUrl" not in info, info


def test_should_disallow_duplicate_email_sign_up(emu):
    """signUp.spec.ts: should disallow duplicate email signUp"""
    email = unique_email("bob")
    register_user(emu, email, PASSWORD)
    expect_error(call(emu, "signUp", {"email": email, "password": PASSWORD}), "EMAIL_EXISTS")
    # Case variants of a same email address are also considered duplicates.
    expect_error(call(emu, "signUp", {"email": email.upper(), "password": PASSWORD}), "EMAIL_EXISTS")


def test_should_error_when_email_format_is_invalid(emu):
    """signUp.spec.ts: should error when email format is invalid"""
    expect_error(call(emu, "signUp", {"email": "not.an.email.address.at.all", "password": PASSWORD}), "INVALID_EMAIL")


def test_should_normalize_email_address_to_all_lowercase(emu):
    """signUp.spec.ts: should normalize email address to all lowercase"""
    local = unique_email("alice").split("@")[0]
    body = expect_ok(call(emu, "signUp", {"email": local[:1].upper() + local[1:] + "@exAMPle.COM",
                                          "password": PASSWORD}))
    assert body["email"] == local + "@example.com"


def test_should_error_when_password_is_too_short(emu):
    """signUp.spec.ts: should error when password is too short"""
    message = expect_error(call(emu, "signUp", {"email": unique_email("me"), "password": "short"}), "WEAK_PASSWORD",
                           contains=True)
    assert message.startswith("WEAK_PASSWORD"), message


@pytest.mark.parametrize("family", FAMILIES)
def test_should_replace_existing_email_password_in_linked_account(emu, family):
    """signUp.spec.ts: should replace existing email / password in linked account"""
    old_email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, old_email, "notasecret")

    body = expect_ok(call(emu, "signUp", {"idToken": user["idToken"], "email": new_email, "password": "notasecret2"},
                          family=family))
    assert body["localId"] == user["localId"]
    assert body["email"] == new_email
    decoded = decode_jwt(body.get("idToken"))
    assert decoded["payload"]["email"] == new_email
    assert decoded["payload"]["firebase"]["sign_in_provider"] == "password"
    assert decoded["payload"]["firebase"]["identities"] == {"email": [new_email]}, decoded["payload"]

    assert get_signin_methods(emu, old_email) == []
    assert get_signin_methods(emu, new_email) == ["password"]


def test_should_error_when_id_token_is_provided_but_email_password_is_not(emu):
    """signUp.spec.ts: should error when idToken is provided but email / password is not"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(call(emu, "signUp", {"idToken": user["idToken"]}), "MISSING_EMAIL")
    expect_error(call(emu, "signUp", {"idToken": user["idToken"], "email": unique_email("alice")}), "MISSING_PASSWORD")


def test_should_error_if_account_to_be_linked_is_disabled(emu):
    """signUp.spec.ts: should error if account to be linked is disabled"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(call(emu, "signUp", {"idToken": user["idToken"], "email": unique_email("bob"), "password": PASSWORD}),
                 "USER_DISABLED")


def test_should_error_when_extra_local_id_parameter_is_provided(emu):
    """signUp.spec.ts: should error when extra localId parameter is provided"""
    # Cannot be specified since this is unauthenticated.
    expect_error(call(emu, "signUp", {"localId": "anything"}), "UNEXPECTED_PARAMETER : User ID")
    # Cannot be specified when linking, even when authenticated.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(call(emu, "signUp", {"idToken": user["idToken"], "localId": "anything"}, admin=True),
                 "UNEXPECTED_PARAMETER : User ID")


def test_should_create_new_account_with_specified_local_id_when_authenticated(emu):
    """signUp.spec.ts: should create new account with specified localId when authenticated"""
    local_id = f"haha-{unique_email('id').split('@')[0]}"
    # Adapted: the account gets an email and password (the emulator creates an anonymous one).
    body = expect_ok(call(emu, "signUp", {"localId": local_id, "email": unique_email("haha"), "password": PASSWORD},
                          admin=True))
    # Shouldn't be set for authenticated requests.
    assert "idToken" not in body and "refreshToken" not in body, body
    assert body["localId"] == local_id


def test_should_error_when_creating_new_user_with_duplicate_local_id(emu):
    """signUp.spec.ts: should error when creating new user with duplicate localId"""
    # Adapted: the existing account is an email/password one, and the new one has an (unused)
    # email and password so that only the localId collides.
    local_id = register_user(emu, unique_email("carol"), PASSWORD)["localId"]
    expect_error(call(emu, "signUp", {"localId": local_id, "email": unique_email("dave"), "password": PASSWORD},
                      admin=True), "DUPLICATE_LOCAL_ID")


def test_should_error_if_another_account_exists_with_same_email_from_idp(emu):
    """signUp.spec.ts: should error if another account exists with same email from IDP"""
    email = unique_email("alice")
    sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub(), "email": email})
    expect_error(call(emu, "signUp", {"email": email, "password": PASSWORD}), "EMAIL_EXISTS")

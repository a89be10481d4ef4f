"""Ported from firebase-tools src/emulator/auth/setAccountInfo.spec.ts ("accounts:update").

Adapted: cases that start from an anonymous user but are about email/password or profile
fields start from an email/password user (noted per test). After an email change Herald, like
the emulator, bumps validSince; the emulator's frozen clock keeps the old idToken usable, a real
clock does not, so such cases continue with the fresh idToken the update returns.

Skipped there: "should add password provider to anon user", "should allow adding email without
password to anon user", "should not set initial email or send OOB when anon user updates email"
(anonymous users); phone-number and MFA cases; "should delete password/phone provider from user"
(`deleteProvider` is not among Herald's update fields for those);
"should error if auth is disabled", "should set tenantId in oobLink" (tenants).
"""

from __future__ import annotations

import json

import pytest

from compat_support import (
    FAMILIES, call, decode_jwt, expect_error, expect_id_token_expired, expect_ok, get_account_info_by_id_token,
    get_signin_methods, inspect_oobs, next_second, register_user, sign_in_with_email_link, sign_in_with_fake_claims,
    unique_email, unique_sub, update_account_by_local_id,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_allow_updating_and_deleting_display_name_and_photo_url(emu, family):
    """setAccountInfo.spec.ts: should allow updating and deleting displayName and photoUrl"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    attrs = {"displayName": "Alice", "photoUrl": "http://localhost/alice.png"}

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], **attrs}, family=family))
    assert body["displayName"] == attrs["displayName"], body
    assert body["photoUrl"] == attrs["photoUrl"], body
    # Updating name and picture shouldn't issue a new token.
    assert "idToken" not in body and "refreshToken" not in body, body

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "deleteAttribute": ["DISPLAY_NAME", "PHOTO_URL"]},
                          family=family))
    assert "displayName" not in body, body
    assert "photoUrl" not in body, body


@pytest.mark.parametrize("family", FAMILIES)
def test_should_set_password_and_issue_new_tokens(emu, family):
    """setAccountInfo.spec.ts: should set password and issue new tokens"""
    email, new_password = unique_email("alice"), "notasecreteither"
    user = register_user(emu, email, PASSWORD)

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "password": new_password}, family=family))
    # Updating password causes new tokens to be issued.
    assert isinstance(body.get("refreshToken"), str), body
    decoded = decode_jwt(body.get("idToken"))
    # Difference: Herald signs its tokens (RS256); the emulator's are alg "none".
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    assert decoded["payload"]["user_id"] == user["localId"]
    assert decoded["payload"]["firebase"]["sign_in_provider"] == "password", decoded["payload"]

    # New password now works.
    body = expect_ok(call(emu, "signInWithPassword", {"email": email, "password": new_password}, family=family))
    assert body["localId"] == user["localId"]


@pytest.mark.parametrize("family", FAMILIES)
def test_should_allow_changing_email_of_an_existing_user_and_send_out_an_oob_to_reset_the_email(emu, family):
    """setAccountInfo.spec.ts: should allow changing email of an existing user, and send out an oob to reset the email"""
    old_email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, old_email, PASSWORD)

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "email": new_email}, family=family))
    # Changing email causes new tokens to be issued.
    assert isinstance(body.get("refreshToken"), str), body
    decoded = decode_jwt(body.get("idToken"))
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    assert decoded["payload"]["user_id"] == user["localId"]
    assert decoded["payload"]["email"] == new_email
    assert decoded["payload"]["firebase"]["sign_in_provider"] == "password", decoded["payload"]

    # New email now works.
    body = expect_ok(call(emu, "signInWithPassword", {"email": new_email, "password": PASSWORD}, family=family))
    assert body["localId"] == user["localId"]
    # Old email can no longer be used to sign in.
    expect_error(call(emu, "signInWithPassword", {"email": old_email, "password": PASSWORD}, family=family),
                 "EMAIL_NOT_FOUND")

    # An oob is sent to oldEmail.
    oobs = inspect_oobs(emu, old_email, new_email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == old_email
    assert oobs[0]["requestType"] == "RECOVER_EMAIL"


def test_should_disallow_setting_email_to_same_as_an_existing_user(emu):
    """setAccountInfo.spec.ts: should disallow setting email to same as an existing user"""
    bob = unique_email("bob")
    register_user(emu, bob, PASSWORD)
    # Adapted: the updating account is an email/password user instead of an anonymous one.
    me = register_user(emu, unique_email("carol"), PASSWORD)

    expect_error(call(emu, "update", {"idToken": me["idToken"], "email": bob}), "EMAIL_EXISTS")
    # Case variants of a same email address are also considered duplicates.
    expect_error(call(emu, "update", {"idToken": me["idToken"], "email": bob.upper(), "password": PASSWORD}),
                 "EMAIL_EXISTS")


def test_should_set_initial_email_for_the_user_after_updating_email(emu):
    """setAccountInfo.spec.ts: should set initialEmail for the user, after updating email"""
    old_email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, old_email, PASSWORD)

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "email": new_email}))
    assert body["email"] == new_email

    # Adapted: the fresh idToken (see the module docstring).
    info = get_account_info_by_id_token(emu, body["idToken"])
    assert info.get("initialEmail") == old_email, info


@pytest.mark.parametrize("family", FAMILIES)
def test_should_reset_email_when_oob_flow_is_initiated_after_updating_user_email(emu, family):
    """setAccountInfo.spec.ts: should reset email when OOB flow is initiated, after updating user email"""
    old_email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, old_email, PASSWORD)
    expect_ok(call(emu, "update", {"idToken": user["idToken"], "email": new_email}, family=family))

    # An oob is sent to the oldEmail.
    oobs = inspect_oobs(emu, old_email, new_email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == old_email
    assert oobs[0]["requestType"] == "RECOVER_EMAIL"

    # The oobCode alone is enough to restore the email.
    body = expect_ok(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}, family=family))
    assert body["email"] == old_email
    # Email is verified since this flow can only be initiated through a link sent to the user's email.
    assert body["emailVerified"] is True

    # oobCode is removed after redeemed.
    assert inspect_oobs(emu, old_email, new_email) == []


def test_should_disallow_resetting_an_email_if_another_user_exists_with_the_same_email(emu):
    """setAccountInfo.spec.ts: should disallow resetting an email if another user exists with the same email"""
    bob, bob_new = unique_email("bob"), unique_email("bob_new")
    user = register_user(emu, bob, PASSWORD)
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "email": bob_new}))
    assert body["email"] == bob_new

    # Register a second user with the first user's initialEmail.
    register_user(emu, bob, "notasecreteither")

    oobs = inspect_oobs(emu, bob, bob_new)
    assert len(oobs) == 1, oobs
    assert oobs[0]["requestType"] == "RECOVER_EMAIL"
    expect_error(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}), "EMAIL_EXISTS")


def test_should_not_update_email_if_user_is_disabled(emu):
    """setAccountInfo.spec.ts: should not update email if user is disabled"""
    user = register_user(emu, unique_email("bob"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(call(emu, "update", {"idToken": user["idToken"], "email": unique_email("alice")}), "USER_DISABLED")


@pytest.mark.parametrize("family", FAMILIES)
def test_should_update_email_when_oob_flow_of_verify_and_change_email_is_initiated(emu, family):
    """setAccountInfo.spec.ts: should update email when OOB flow of VERIFY_AND_CHANGE_EMAIL is initiated"""
    old_email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, old_email, PASSWORD)
    expect_ok(call(emu, "sendOobCode", {"idToken": user["idToken"], "newEmail": new_email,
                                        "requestType": "VERIFY_AND_CHANGE_EMAIL"}, family=family))

    oobs = inspect_oobs(emu, old_email, new_email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == old_email
    assert oobs[0]["newEmail"] == new_email
    assert oobs[0]["requestType"] == "VERIFY_AND_CHANGE_EMAIL"

    body = expect_ok(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}, family=family))
    assert body["email"] == new_email
    assert body.get("newEmail") == new_email, body
    assert body["emailVerified"] is True

    assert inspect_oobs(emu, old_email, new_email) == []


def test_should_disallow_changing_an_email_if_another_user_exists_with_the_same_email(emu):
    """setAccountInfo.spec.ts: should disallow changing an email if another user exists with the same email"""
    email, other = unique_email("alice"), unique_email("bob")
    user = register_user(emu, email, PASSWORD)
    expect_ok(call(emu, "sendOobCode", {"idToken": user["idToken"], "newEmail": other,
                                        "requestType": "VERIFY_AND_CHANGE_EMAIL"}))
    oobs = inspect_oobs(emu, email, other)
    assert len(oobs) == 1, oobs
    assert oobs[0]["requestType"] == "VERIFY_AND_CHANGE_EMAIL"

    taken = register_user(emu, other, "notasecreteither")
    expect_error(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}), "EMAIL_EXISTS")

    # Adapted (deliberate difference, README): a redemption whose effect fails consumes nothing, so the
    # code stays listed and works once the address is free again. The emulator deletes it first.
    assert [o["oobCode"] for o in inspect_oobs(emu, email, other)] == [oobs[0]["oobCode"]]
    expect_ok(call(emu, "delete", {"idToken": taken["idToken"]}))
    body = expect_ok(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}))
    assert body["email"] == other
    assert inspect_oobs(emu, email, other) == []


def test_should_error_if_user_is_disabled_when_updating_by_id_token(emu):
    """setAccountInfo.spec.ts: should error if user is disabled when updating by idToken"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(call(emu, "update", {"idToken": user["idToken"], "displayName": "Foo"}), "USER_DISABLED")


def test_should_still_update_user_despite_user_is_disabled_when_authenticated(emu):
    """setAccountInfo.spec.ts: should still update user despite user is disabled when authenticated"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    # These should still work.
    update_account_by_local_id(emu, user["localId"], {"displayName": "Foo"})
    update_account_by_local_id(emu, user["localId"], {"disableUser": False})


def test_should_invalidate_old_tokens_after_updating_valid_since_or_password(emu):
    """setAccountInfo.spec.ts: should invalidate old tokens after updating validSince or password"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    next_second()  # getClock().tick(2000)

    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "password": "notasecreteither"}))
    id_token2 = body.get("idToken")
    # Old idToken should no longer work, while the new one works.
    expect_id_token_expired(emu, user["idToken"])
    get_account_info_by_id_token(emu, id_token2)

    next_second()  # getClock().tick(2000)

    # Any value works, only the presence of the field matters.
    body = expect_ok(call(emu, "update", {"idToken": id_token2, "validSince": "0"}))
    id_token3 = body.get("idToken")
    expect_id_token_expired(emu, user["idToken"])
    expect_id_token_expired(emu, id_token2)
    get_account_info_by_id_token(emu, id_token3)


def test_should_update_user_by_local_id_when_authenticated(emu):
    """setAccountInfo.spec.ts: should update user by localId when authenticated"""
    user = register_user(emu, unique_email("foo"), "barbaz")
    # Adapted: without phoneNumber (phone numbers are out of scope).
    attrs = {"displayName": "Alice", "photoUrl": "http://localhost/alice.png"}
    body = expect_ok(call(emu, "update", {"localId": user["localId"], **attrs, "emailVerified": True}, admin=True))
    assert body["displayName"] == attrs["displayName"], body
    assert body["photoUrl"] == attrs["photoUrl"], body
    assert body["emailVerified"] is True, body


def test_should_error_if_authenticated_request_does_not_specify_local_id(emu):
    """setAccountInfo.spec.ts: should error if authenticated request does not specify localId"""
    expect_error(call(emu, "update", {"emailVerified": True}, admin=True), "MISSING_LOCAL_ID")



def test_should_update_custom_attributes_and_add_them_to_id_tokens(emu):
    """setAccountInfo.spec.ts: should update customAttributes and add them to ID Tokens"""
    email = unique_email("claims")
    user = register_user(emu, email, PASSWORD)
    attrs = {"foo": "bar", "baz": {"answer": 42}}
    expect_ok(call(emu, "update", {"localId": user["localId"], "customAttributes": json.dumps(attrs)}, admin=True))

    payload = decode_jwt(sign_in_with_email_link(emu, email)["idToken"])["payload"]
    assert payload["foo"] == attrs["foo"] and payload["baz"] == attrs["baz"], payload


def test_should_error_if_custom_attributes_are_invalid(emu):
    """setAccountInfo.spec.ts: should error if customAttributes are invalid"""
    user = register_user(emu, unique_email("bad-claims"), PASSWORD)
    for claims, message in [("{definitely[not]json}", "INVALID_CLAIMS"), ("42", "INVALID_CLAIMS"),
                            ('["a", "b"]', "INVALID_CLAIMS"), ('{"sub": "12345"}', "FORBIDDEN_CLAIM : sub"),
                            ('{"a":"' + "x" * 998 + '"}', "CLAIMS_TOO_LARGE")]:
        resp = call(emu, "update", {"localId": user["localId"], "customAttributes": claims}, admin=True)
        expect_error(resp, message, exact=True)


def test_should_delete_google_com_provider_from_user(emu):
    """setAccountInfo.spec.ts: should delete google.com provider from user"""
    email = unique_email("bob")
    user = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub(), "email": email})
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "deleteProvider": ["google.com"]}))
    assert "google.com" not in [p["providerId"] for p in body.get("providerUserInfo", [])], body
    methods = get_signin_methods(emu, email)
    assert "google.com" not in methods and "emailLink" not in methods, methods


def expect_provider(listed: list, given: dict) -> None:
    """The emulator compares the linked provider with `deep.equal`; Herald adds `federatedId`, as production does
    (README "Deliberate differences")."""
    [linked] = [p for p in listed if p["providerId"] == given["providerId"]]
    assert {k: v for k, v in linked.items() if k != "federatedId"} == given, linked
    assert linked.get("federatedId", given["rawId"]) == given["rawId"], linked


@pytest.mark.parametrize("family", FAMILIES)
def test_should_link_provider_account_with_existing_user_account(emu, family):
    """setAccountInfo.spec.ts: should link provider account with existing user account"""
    user = register_user(emu, unique_email("test"), "password")
    given = {"providerId": "google.com", "rawId": unique_sub(), "email": unique_email("linked"),
             "displayName": "Linked User", "photoUrl": "https://example.com/photo.jpg"}
    body = expect_ok(call(emu, "update", {"idToken": user["idToken"], "linkProviderUserInfo": given}, family=family))
    assert len(body["providerUserInfo"]) == 2, body
    expect_provider(body["providerUserInfo"], given)
    info = get_account_info_by_id_token(emu, user["idToken"])
    assert len(info["providerUserInfo"]) == 2, info
    expect_provider(info["providerUserInfo"], given)


def test_should_error_if_link_provider_user_info_is_missing_required_fields(emu):
    """setAccountInfo.spec.ts: should error if linkProviderUserInfo is missing required fields"""
    user = register_user(emu, unique_email("test"), "password")
    resp = call(emu, "update", {"idToken": user["idToken"],
                                "linkProviderUserInfo": {"providerId": "google.com", "email": unique_email("linked")}})
    expect_error(resp, "MISSING_RAW_ID", contains=True)
    resp = call(emu, "update", {"idToken": user["idToken"],
                                "linkProviderUserInfo": {"rawId": unique_sub(), "email": unique_email("linked")}})
    expect_error(resp, "MISSING_PROVIDER_ID", contains=True)


def test_should_error_if_user_is_disabled_when_linking_a_provider(emu):
    """setAccountInfo.spec.ts: should error if user is disabled when linking a provider"""
    user = register_user(emu, unique_email("test"), "password")
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    given = {"providerId": "google.com", "rawId": unique_sub(), "email": unique_email("linked")}
    expect_error(call(emu, "update", {"idToken": user["idToken"], "linkProviderUserInfo": given}), "USER_DISABLED")

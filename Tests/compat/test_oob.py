"""Ported from firebase-tools src/emulator/auth/oob.spec.ts ("accounts:sendOobCode").

Skipped there: "should error when verifying email for accounts without email" (anonymous
users), "should error if auth is disabled", "should error for email sign in if not enabled",
"should error on resetPassword if auth is disabled", "should error on resetPassword if password
sign up is disabled" (tenants).
"""

from __future__ import annotations

import pytest

from compat_support import (
    CONTINUE_URL, FAMILIES, KIND, call, expect_error, expect_id_token_expired, expect_ok, inspect_oobs, next_second,
    register_user, unique_email, update_account_by_local_id,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_generate_oob_code_for_verify_email(emu, family):
    """oob.spec.ts: should generate OOB code for verify email"""
    email = unique_email("alice")
    user = register_user(emu, email, PASSWORD)

    body = expect_ok(call(emu, "sendOobCode", {"idToken": user["idToken"], "requestType": "VERIFY_EMAIL"},
                          family=family))
    assert body["email"] == email
    # These fields should not be set since returnOobLink is not set.
    assert "oobCode" not in body and "oobLink" not in body, body

    oobs = inspect_oobs(emu, email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == email
    assert oobs[0]["requestType"] == "VERIFY_EMAIL"

    # The returned oobCode can be redeemed to verify the email; no idToken needed.
    body = expect_ok(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}, family=family))
    assert body["localId"] == user["localId"]
    assert body["email"] == email
    assert body["emailVerified"] is True

    # oobCode is removed after redeemed.
    assert inspect_oobs(emu, email) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_should_return_oob_code_directly_for_requests_with_oauth_2(emu, family):
    """oob.spec.ts: should return OOB code directly for requests with OAuth 2"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    for extra in ({"requestType": "PASSWORD_RESET"}, {"requestType": "VERIFY_EMAIL"},
                  {"requestType": "VERIFY_AND_CHANGE_EMAIL", "newEmail": unique_email("bob")}):
        body = expect_ok(call(emu, "sendOobCode", {"email": email, "returnOobLink": True, **extra},
                              family=family, admin=True))
        assert body["email"] == email, (extra, body)
        assert isinstance(body.get("oobCode"), str), (extra, body)
        assert isinstance(body.get("oobLink"), str), (extra, body)


def test_should_return_oob_code_by_id_token_for_oauth_2_requests_as_well(emu):
    """oob.spec.ts: should return OOB code by idToken for OAuth 2 requests as well"""
    email = unique_email("alice")
    user = register_user(emu, email, PASSWORD)
    body = expect_ok(call(emu, "sendOobCode", {"idToken": user["idToken"], "requestType": "VERIFY_EMAIL",
                                               "returnOobLink": True}, admin=True))
    assert body["email"] == email
    assert isinstance(body.get("oobCode"), str) and isinstance(body.get("oobLink"), str), body

    body = expect_ok(call(emu, "sendOobCode", {"email": email, "newEmail": unique_email("bob"),
                                               "idToken": user["idToken"], "requestType": "VERIFY_AND_CHANGE_EMAIL",
                                               "returnOobLink": True}, admin=True))
    assert body["email"] == email
    assert isinstance(body.get("oobCode"), str) and isinstance(body.get("oobLink"), str), body


def test_should_error_when_trying_to_verify_email_without_id_token_or_email(emu):
    """oob.spec.ts: should error when trying to verify email without idToken or email"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    expect_error(call(emu, "sendOobCode", {"idToken": "hoge", "requestType": "VERIFY_EMAIL"}), "INVALID_ID_TOKEN")
    expect_error(call(emu, "sendOobCode", {"returnOobLink": True, "requestType": "VERIFY_EMAIL"}, admin=True),
                 "MISSING_EMAIL")
    assert inspect_oobs(emu, email) == []


def test_should_error_when_trying_to_verify_email_without_id_token_if_not_return_oob_link(emu):
    """oob.spec.ts: should error when trying to verify email without idToken if not returnOobLink"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    # email here is ignored because returnOobLink is not set.
    expect_error(call(emu, "sendOobCode", {"email": email, "requestType": "VERIFY_EMAIL"}), "INVALID_ID_TOKEN")
    assert inspect_oobs(emu, email) == []


def test_should_error_when_trying_to_verify_email_not_associated_with_any_user(emu):
    """oob.spec.ts: should error when trying to verify email not associated with any user"""
    nobody = unique_email("nosuchuser")
    expect_error(call(emu, "sendOobCode", {"email": nobody, "returnOobLink": True, "requestType": "VERIFY_EMAIL"},
                      admin=True), "USER_NOT_FOUND")
    assert inspect_oobs(emu, nobody) == []


def test_should_error_if_user_is_disabled(emu):
    """oob.spec.ts: should error if user is disabled"""
    email = unique_email("foo")
    user = register_user(emu, email, "foobar")
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(call(emu, "sendOobCode", {"email": email, "idToken": user["idToken"],
                                           "requestType": "VERIFY_EMAIL"}), "USER_DISABLED")


def test_should_error_when_continue_url_is_invalid(emu):
    """oob.spec.ts: should error when continueUrl is invalid"""
    email = unique_email("alice")
    user = register_user(emu, email, PASSWORD)
    expect_error(call(emu, "sendOobCode", {"idToken": user["idToken"], "requestType": "VERIFY_EMAIL",
                                           "continueUrl": "noSchemeOrHost"}), "INVALID_CONTINUE_URI", contains=True)
    assert inspect_oobs(emu, email) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_should_generate_oob_code_for_reset_password(emu, family):
    """oob.spec.ts: should generate OOB code for reset password"""
    email = unique_email("alice")
    user = register_user(emu, email, PASSWORD)
    next_second()  # getClock().tick(2000): the idToken was issued in the past.

    body = expect_ok(call(emu, "sendOobCode", {"requestType": "PASSWORD_RESET", "email": email}, family=family))
    assert body["email"] == email
    assert "oobCode" not in body and "oobLink" not in body, body

    oobs = inspect_oobs(emu, email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == email
    assert oobs[0]["requestType"] == "PASSWORD_RESET"

    body = expect_ok(call(emu, "resetPassword", {"oobCode": oobs[0]["oobCode"], "newPassword": "notasecret2"},
                          family=family))
    assert body["requestType"] == "PASSWORD_RESET"
    assert body["email"] == email

    # All old idTokens are invalidated.
    expect_id_token_expired(emu, user["idToken"], family=family)


@pytest.mark.parametrize("family", FAMILIES)
def test_should_return_purpose_of_oob_codes_via_reset_password_endpoint(emu, family):
    """oob.spec.ts: should return purpose of oobCodes via resetPassword endpoint"""
    email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, email, PASSWORD)

    expect_ok(call(emu, "sendOobCode", {"requestType": "PASSWORD_RESET", "email": email}, family=family))
    expect_ok(call(emu, "sendOobCode", {"requestType": "VERIFY_EMAIL", "idToken": user["idToken"]}, family=family))
    # Adapted: Herald requires continueUrl and canHandleCodeInApp for EMAIL_SIGNIN.
    expect_ok(call(emu, "sendOobCode", {"email": new_email, "requestType": "EMAIL_SIGNIN",
                                        "continueUrl": CONTINUE_URL, "canHandleCodeInApp": True}, family=family))
    expect_ok(call(emu, "sendOobCode", {"email": email, "newEmail": new_email, "requestType": "VERIFY_AND_CHANGE_EMAIL",
                                        "idToken": user["idToken"]}, family=family))

    oobs = inspect_oobs(emu, email, new_email)
    assert len(oobs) == 4, oobs
    for oob in oobs:
        # Without newPassword this only returns the purpose (requestType), never consumes.
        body = expect_ok(call(emu, "resetPassword", {"oobCode": oob["oobCode"]}, family=family))
        assert body["requestType"] == oob["requestType"], (oob, body)
        if oob["requestType"] == "EMAIL_SIGNIN":
            # Do not reveal the email when inspecting an email sign-in oobCode.
            assert "email" not in body, body
        else:
            assert body["email"] == oob["email"], (oob, body)
        if oob["requestType"] == "VERIFY_AND_CHANGE_EMAIL":
            assert body["newEmail"] == new_email, body

    # OOB codes are not consumed by the lookup above.
    assert len(inspect_oobs(emu, email, new_email)) == 4


def test_should_error_when_sending_a_password_reset_to_non_existent_user_with_improved_email_privacy_disabled(emu):
    """oob.spec.ts: should error when sending a password reset to non-existent user with improved email privacy disabled"""
    resp = call(emu, "sendOobCode", {"email": unique_email("alice"), "requestType": "PASSWORD_RESET",
                                     "returnOobLink": True}, admin=True)
    expect_error(resp, "EMAIL_NOT_FOUND")


def test_should_return_email_address_when_sending_a_password_reset_to_non_existent_user_with_improved_email_privacy_enabled(
        emu_protected):
    """oob.spec.ts: should return email address when sending a password reset to non-existent user with improved email privacy enabled"""
    email = unique_email("alice")
    # Adapted (deliberate difference, README): an app caller gets the same answer as for a real account;
    # an administrator (returnOobLink) is told the truth, so a link generator never gets a link-less answer.
    body = expect_ok(call(emu_protected, "sendOobCode", {"email": email, "requestType": "PASSWORD_RESET"}))
    assert body["kind"] == "identitytoolkit#GetOobConfirmationCodeResponse"
    assert body["email"] == email
    expect_error(call(emu_protected, "sendOobCode", {"email": email, "requestType": "PASSWORD_RESET",
                                                     "returnOobLink": True}, admin=True), "EMAIL_NOT_FOUND")


@pytest.mark.parametrize("family", FAMILIES)
def test_should_generate_oob_code_for_verify_and_change_email(emu, family):
    """oob.spec.ts: should generate OOB code for verify and change email"""
    email, new_email = unique_email("alice"), unique_email("bob")
    user = register_user(emu, email, PASSWORD)

    body = expect_ok(call(emu, "sendOobCode", {"email": email, "newEmail": new_email, "idToken": user["idToken"],
                                               "requestType": "VERIFY_AND_CHANGE_EMAIL"}, family=family))
    assert body["kind"] == KIND["sendOobCode"]
    assert body["email"] == email
    assert "oobCode" not in body and "oobLink" not in body, body

    oobs = inspect_oobs(emu, email, new_email)
    assert len(oobs) == 1, oobs
    assert oobs[0]["email"] == email
    assert oobs[0]["requestType"] == "VERIFY_AND_CHANGE_EMAIL"

    body = expect_ok(call(emu, "update", {"oobCode": oobs[0]["oobCode"]}, family=family))
    assert body["localId"] == user["localId"]
    assert body["email"] == new_email
    assert body["emailVerified"] is True

    assert inspect_oobs(emu, email, new_email) == []


def test_should_error_when_trying_to_verify_and_change_email_without_id_token_or_email_or_new_email(emu):
    """oob.spec.ts: should error when trying to verify and change email without idToken or email or newEmail"""
    email, new_email = unique_email("alice"), unique_email("bob")
    register_user(emu, email, PASSWORD)
    expect_error(call(emu, "sendOobCode", {"newEmail": new_email, "requestType": "VERIFY_AND_CHANGE_EMAIL"}),
                 "MISSING_ID_TOKEN")
    expect_error(call(emu, "sendOobCode", {"email": email, "requestType": "VERIFY_AND_CHANGE_EMAIL"}),
                 "MISSING_NEW_EMAIL")
    expect_error(call(emu, "sendOobCode", {"newEmail": new_email, "returnOobLink": True,
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}, admin=True), "MISSING_EMAIL")
    expect_error(call(emu, "sendOobCode", {"email": email, "returnOobLink": True,
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}, admin=True), "MISSING_NEW_EMAIL")
    assert inspect_oobs(emu, email, new_email) == []


def test_should_error_when_trying_to_verify_and_change_email_without_id_token_if_not_return_oob_link(emu):
    """oob.spec.ts: should error when trying to verify and change email without idToken if not returnOobLink"""
    email, new_email = unique_email("alice"), unique_email("bob")
    register_user(emu, email, PASSWORD)
    expect_error(call(emu, "sendOobCode", {"email": email, "newEmail": new_email,
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}), "MISSING_ID_TOKEN")
    assert inspect_oobs(emu, email, new_email) == []


def test_should_error_when_trying_to_verify_and_change_email_not_associated_with_any_user(emu):
    """oob.spec.ts: should error when trying to verify and change email not associated with any user"""
    nobody, new_email = unique_email("nosuchuser"), unique_email("bob")
    expect_error(call(emu, "sendOobCode", {"email": nobody, "newEmail": new_email, "returnOobLink": True,
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}, admin=True), "USER_NOT_FOUND")
    assert inspect_oobs(emu, nobody, new_email) == []


def test_should_error_if_new_email_is_already_associated_to_another_user(emu):
    """oob.spec.ts: should error if newEmail is already associated to another user"""
    email, other = unique_email("alice"), unique_email("bob")
    user = register_user(emu, email, PASSWORD)
    another = register_user(emu, other, PASSWORD)
    expect_error(call(emu, "sendOobCode", {"idToken": user["idToken"], "email": email, "newEmail": another["email"],
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}), "EMAIL_EXISTS")
    expect_error(call(emu, "sendOobCode", {"email": email, "newEmail": another["email"], "returnOobLink": True,
                                           "requestType": "VERIFY_AND_CHANGE_EMAIL"}, admin=True), "EMAIL_EXISTS")
    assert inspect_oobs(emu, email, other) == []

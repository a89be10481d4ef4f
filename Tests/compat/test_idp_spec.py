"""Ported from firebase-tools src/emulator/auth/idp.spec.ts ("sign-in with credential",
`accounts:signInWithIdp`, v3 `verifyAssertion`).

The emulator's tests use fixed provider user ids and addresses on a fresh project; here the server is
shared by the module, so each test uses ids (`unique_sub`) and addresses (`unique_email`) of its own,
except the two cases about Firebase's sample Google tokens, which get a server of their own.

Skipped there: the `allowDuplicateEmails` cases (4; Herald keeps one account per address), the MFA
cases (2), "should error if auth is disabled" and "should create a new account with tenantId" and the
tenant MFA case (tenants), the SAML cases (5) and the blocking-function cases (5).
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from compat_support import (
    FAMILIES, call, decode_jwt, expect_error, expect_ok, fake_claims, get_account_info_by_id_token,
    get_signin_methods, register_user, sign_in_with_email_link, sign_in_with_fake_claims, unique_email, unique_sub,
    update_account_by_local_id,
)

PASSWORD = "notasecret"

# testing/helpers.ts: an unsigned token shaped like Google's, and a real one with its signature zeroed.
FAKE_GOOGLE_ACCOUNT = {
    "email": "example@gmail.com",
    "emailVerified": True,
    "rawId": "123456789012345678901",
    "idToken": (
        "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJpc3MiOiJhY2NvdW50cy5nb29nbGUuY29tIiwiYXpwIjoiMjI4NzQ2ODI4NDQtYjBzOHM3N"
        "WIzaWVkYjJtZDRobHMydm9xNnNsbGJzbTMuYXBwcy5nb29nbGV1c2VyY29udGVudC5jb20iLCJhdWQiOiIyMjg3NDY4Mjg0NC1iMHM4czc1Yj"
        "NpZWRiMm1kNGhsczJ2b3E2c2xsYnNtMy5hcHBzLmdvb2dsZXVzZXJjb250ZW50LmNvbSIsInN1YiI6IjEyMzQ1Njc4OTAxMjM0NTY3ODkwMSIs"
        "ImVtYWlsIjoiZXhhbXBsZUBnbWFpbC5jb20iLCJlbWFpbF92ZXJpZmllZCI6dHJ1ZSwiYXRfaGFzaCI6IjAwMDAwMDAwMDAwMDAwMDAwMDAwMDA"
        "iLCJpYXQiOjE1OTc4ODI2ODEsImV4cCI6MTU5Nzg4NjI4MX0."),
}
REAL_GOOGLE_ACCOUNT = {
    "email": "oberynbaelish.331826@gmail.com",
    "emailVerified": True,
    "rawId": "115113236566683398301",
    "idToken": (
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IjZiYzYzZTlmMThkNTYxYjM0ZjU2NjhmODhhZTI3ZDQ4ODc2ZDgwNzMiLCJ0eXAiOiJKV1QifQ.eyJpc3Mi"
        "OiJhY2NvdW50cy5nb29nbGUuY29tIiwiYXpwIjoiMjI4NzQ2ODI4NDQtYjBzOHM3NWIzaWVkYjJtZDRobHMydm9xNnNsbGJzbTMuYXBwcy5nb2"
        "9nbGV1c2VyY29udGVudC5jb20iLCJhdWQiOiIyMjg3NDY4Mjg0NC1iMHM4czc1YjNpZWRiMm1kNGhsczJ2b3E2c2xsYnNtMy5hcHBzLmdvb2ds"
        "ZXVzZXJjb250ZW50LmNvbSIsInN1YiI6IjExNTExMzIzNjU2NjY4MzM5ODMwMSIsImVtYWlsIjoib2JlcnluYmFlbGlzaC4zMzE4MjZAZ21haW"
        "wuY29tIiwiZW1haWxfdmVyaWZpZWQiOnRydWUsImF0X2hhc2giOiJXNTlTOEs4Y3g0Y3hYYmh0YmFXYndBIiwiaWF0IjoxNTk3ODgyNjgxLCJl"
        "eHAiOjE1OTc4ODYyODF9." + "0" * 342),
}
GOOGLE_SCOPES = {"openid", "https://www.googleapis.com/auth/userinfo.profile",
                 "https://www.googleapis.com/auth/userinfo.email"}


def idp_body(provider_id: str, token: str, **extra) -> dict:
    return {"postBody": f"providerId={quote(provider_id, safe='')}&id_token={quote(token, safe='')}",
            "requestUri": "http://localhost", **extra}


def expect_google_sign_up(body: dict, account: dict) -> None:
    """What the two sample-token cases check of the answer."""
    assert body["isNewUser"] is True and body["email"] == account["email"], body
    assert body["emailVerified"] is account["emailVerified"], body
    assert body["federatedId"] == f"https://accounts.google.com/{account['rawId']}", body
    assert body["oauthIdToken"] == account["idToken"] and body["providerId"] == "google.com", body
    assert isinstance(body.get("refreshToken"), str), body
    assert "displayName" not in body and "photoUrl" not in body, body
    raw = json.loads(body["rawUserInfo"])
    assert raw["id"] == account["rawId"] and raw["email"] == account["email"], raw
    assert raw["verified_email"] is True and raw["locale"] == "en", raw
    assert set(raw["granted_scopes"].split(" ")) == GOOGLE_SCOPES, raw
    payload = decode_jwt(body["idToken"])["payload"]
    assert "provider_id" not in payload, payload
    assert payload["firebase"]["identities"] == {"google.com": [account["rawId"]], "email": [account["email"]]}, payload
    assert payload["firebase"]["sign_in_provider"] == "google.com", payload


@pytest.mark.parametrize("family", FAMILIES)
def test_should_create_new_account_with_idp_from_unsigned_id_token(compat_server, family):
    """idp.spec.ts: should create new account with IDP from unsigned ID token"""
    srv = compat_server()
    body = expect_ok(call(srv, "signInWithIdp", idp_body(
        "google.com", FAKE_GOOGLE_ACCOUNT["idToken"], returnIdpCredential=True, returnSecureToken=True), family=family))
    expect_google_sign_up(body, FAKE_GOOGLE_ACCOUNT)


def test_should_create_new_account_with_idp_from_production_id_token(compat_server):
    """idp.spec.ts: should create new account with IDP from production ID token"""
    srv = compat_server()
    body = expect_ok(call(srv, "signInWithIdp", idp_body(
        "google.com", REAL_GOOGLE_ACCOUNT["idToken"], returnIdpCredential=True, returnSecureToken=True)))
    expect_google_sign_up(body, REAL_GOOGLE_ACCOUNT)


@pytest.mark.parametrize("family", FAMILIES)
def test_should_create_new_account_with_idp_from_unencoded_json_claims(emu, family):
    """idp.spec.ts: should create new account with IDP from unencoded JSON claims"""
    claims = fake_claims(sub=unique_sub(), name="Ada Lovelace", given_name="Ada", family_name="Lovelace",
                         picture="http://localhost/fake-picture-url.png")
    token = json.dumps(claims)
    body = expect_ok(call(emu, "signInWithIdp", idp_body(
        "google.com", token, returnIdpCredential=True, returnSecureToken=True), family=family))
    assert body["isNewUser"] is True, body
    assert body["federatedId"] == f"https://accounts.google.com/{claims['sub']}", body
    assert body["oauthIdToken"] == token and body["providerId"] == "google.com", body
    assert body["displayName"] == body["fullName"] == claims["name"], body
    assert body["firstName"] == claims["given_name"] and body["lastName"] == claims["family_name"], body
    assert body["photoUrl"] == claims["picture"] and isinstance(body.get("refreshToken"), str), body
    raw = json.loads(body["rawUserInfo"])
    assert raw["id"] == claims["sub"] and raw["name"] == claims["name"], raw
    assert raw["given_name"] == claims["given_name"] and raw["family_name"] == claims["family_name"], raw
    assert raw["picture"] == claims["picture"], raw
    assert "https://www.googleapis.com/auth/userinfo.email" not in raw["granted_scopes"].split(" "), raw
    payload = decode_jwt(body["idToken"])["payload"]
    assert payload["firebase"]["identities"] == {"google.com": [claims["sub"]]}, payload
    assert payload["firebase"]["sign_in_provider"] == "google.com", payload


def test_should_accept_params_in_request_uri(emu):
    """idp.spec.ts: should accept params (e.g. providerId, id_token) in requestUri"""
    token = json.dumps(fake_claims(sub=unique_sub()))
    body = expect_ok(call(emu, "signInWithIdp", {
        "requestUri": f"http://localhost?providerId=google.com&id_token={quote(token, safe='')}",
        "returnIdpCredential": True}))
    assert body["providerId"] == "google.com", body


def test_should_copy_attributes_to_user_on_idp_sign_up(emu):
    """idp.spec.ts: should copy attributes to user on IDP sign-up"""
    claims = {"sub": unique_sub(), "screen_name": "turingcomplete", "name": "Alan Turing",
              "picture": "http://localhost/turing.png"}
    user = sign_in_with_fake_claims(emu, "google.com", claims)
    info = get_account_info_by_id_token(emu, user["idToken"])
    assert info["photoUrl"] == claims["picture"] and info["displayName"] == claims["name"], info
    assert info.get("screenName") == claims["screen_name"], info


def test_should_sign_in_existing_account_if_provider_id_and_sub_is_the_same(emu):
    """idp.spec.ts: should sign in existing account if (providerId, sub) is the same"""
    sub = unique_sub()
    user1 = sign_in_with_fake_claims(emu, "google.com", {"sub": sub})
    user2 = sign_in_with_fake_claims(emu, "google.com", {"sub": sub})
    assert user2["localId"] == user1["localId"]
    user3 = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub()})
    assert user3["localId"] != user1["localId"]
    user4 = sign_in_with_fake_claims(emu, "apple.com", {"sub": sub})
    assert user4["localId"] != user1["localId"]


def test_should_error_if_user_is_disabled(emu):
    """idp.spec.ts: should error if user is disabled"""
    sub = unique_sub()
    user = sign_in_with_fake_claims(emu, "google.com", {"sub": sub})
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    token = json.dumps(fake_claims(sub=sub, name="Foo"))
    resp = call(emu, "signInWithIdp", idp_body("google.com", token, idToken=user["idToken"], returnIdpCredential=True))
    expect_error(resp, "USER_DISABLED")


def test_should_add_idp_as_a_sign_in_method_for_email_if_available(emu):
    """idp.spec.ts: should add IDP as a sign-in method for email if available"""
    email, sub = unique_email("foo"), unique_sub()
    sign_in_with_fake_claims(emu, "google.com", {"sub": sub, "email": email})
    assert get_signin_methods(emu, email) == ["google.com"]
    new_email = unique_email("bar")
    user = sign_in_with_fake_claims(emu, "google.com", {"sub": sub, "email": new_email})
    assert get_signin_methods(emu, new_email) == ["google.com"]
    # The account-level email is still the old email.
    assert get_account_info_by_id_token(emu, user["idToken"])["email"] == email


@pytest.mark.parametrize("family", FAMILIES)
def test_should_unlink_password_and_overwrite_profile_attributes_if_user_had_unverified_email(emu, family):
    """idp.spec.ts: should unlink password and overwite profile attributes if user had unverified email"""
    user = register_user(emu, unique_email("foo"), PASSWORD, displayName="Foo")
    photo_url = "http://localhost/photo-from-idp.png"
    signed = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub(), "email": user["email"],
                                                          "email_verified": True, "picture": photo_url}, family=family)
    assert signed["localId"] == user["localId"]
    assert get_signin_methods(emu, user["email"]) == ["google.com"]
    info = get_account_info_by_id_token(emu, signed["idToken"])
    assert info["emailVerified"] is True, info
    # Profile attributes are overwritten (if provided by the IdP) or cleared.
    assert info.get("photoUrl") == photo_url and "displayName" not in info, info


def test_should_not_unlink_password_if_email_was_already_verified(emu):
    """idp.spec.ts: should not unlink password if email was already verified"""
    user = register_user(emu, unique_email("foo"), PASSWORD, displayName="Foo")
    # The emulator verifies the address by the email-link sign-in alone; Herald's would then drop the password
    # (README "Deliberate differences"), so an administrator verifies it first.
    update_account_by_local_id(emu, user["localId"], {"emailVerified": True})
    sign_in_with_email_link(emu, user["email"])
    photo_url = "http://localhost/photo-from-idp.png"
    signed = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub(), "email": user["email"],
                                                          "email_verified": True, "picture": photo_url})
    assert signed["localId"] == user["localId"]
    assert sorted(get_signin_methods(emu, user["email"])) == sorted(["google.com", "password", "emailLink"])
    info = get_account_info_by_id_token(emu, signed["idToken"])
    assert info["emailVerified"] is True, info
    assert info.get("photoUrl") == photo_url and "displayName" not in info, info


def test_should_return_need_confirmation_if_both_account_and_idp_has_unverified_email(emu):
    """idp.spec.ts: should return needConfirmation if both account and IDP has unverified email"""
    email = unique_email("bar")
    first = sign_in_with_fake_claims(emu, "facebook.com", {"sub": unique_sub(), "email": email,
                                                            "email_verified": False, "name": "Bar"})
    token = json.dumps(fake_claims(sub=unique_sub(), email=email, email_verified=False, name="Foo",
                                   picture="http://localhost/photo-from-idp.png"))
    body = expect_ok(call(emu, "signInWithIdp", {
        "requestUri": f"http://localhost?providerId=google.com&id_token={quote(token, safe='')}",
        "returnIdpCredential": True}))
    assert body["needConfirmation"] is True and body["localId"] == first["localId"], body
    assert "idToken" not in body and body["verifiedProvider"] == ["facebook.com"], body
    assert get_signin_methods(emu, email) == ["facebook.com"]
    info = get_account_info_by_id_token(emu, first["idToken"])
    assert info["emailVerified"] is False and info["displayName"] == "Bar" and "photoUrl" not in info, info


@pytest.mark.parametrize("family", FAMILIES)
def test_should_error_when_request_uri_is_missing_or_invalid(emu, family):
    """idp.spec.ts: should error when requestUri is missing or invalid"""
    post_body = f"id_token={FAKE_GOOGLE_ACCOUNT['idToken']}"
    expect_error(call(emu, "signInWithIdp", {"postBody": post_body}, family=family), "MISSING_REQUEST_URI")
    expect_error(call(emu, "signInWithIdp", {"postBody": post_body, "requestUri": "notAnAbsoluteUriAndThusInvalid"},
                      family=family), "INVALID_REQUEST_URI")


def test_should_error_when_missing_provider_id_is_missing(emu):
    """idp.spec.ts: should error when missing providerId is missing"""
    resp = call(emu, "signInWithIdp", {"postBody": f"id_token={FAKE_GOOGLE_ACCOUNT['idToken']}",
                                       "requestUri": "http://localhost"})
    expect_error(resp, "INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential:", contains=True)


def test_should_error_when_sub_is_missing_or_not_a_string(emu):
    """idp.spec.ts: should error when sub is missing or not a string"""
    for token in ("{}", json.dumps({"sub": 12345})):
        resp = call(emu, "signInWithIdp", {"postBody": f"providerId=google.com&id_token={token}",
                                           "requestUri": "http://localhost"})
        expect_error(resp, "INVALID_IDP_RESPONSE", contains=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_should_link_idp_to_existing_account_by_id_token(emu, family):
    """idp.spec.ts: should link IDP to existing account by idToken"""
    user = register_user(emu, unique_email("foo"), PASSWORD)
    claims = fake_claims(sub=unique_sub(), name="Foo")
    body = expect_ok(call(emu, "signInWithIdp", idp_body(
        "google.com", json.dumps(claims), idToken=user["idToken"], returnIdpCredential=True), family=family))
    assert not body.get("isNewUser") and body["localId"] == user["localId"], body
    assert isinstance(body.get("refreshToken"), str), body
    payload = decode_jwt(body["idToken"])["payload"]
    assert payload["firebase"]["identities"] == {"google.com": [claims["sub"]], "email": [user["email"]]}, payload
    assert payload["firebase"]["sign_in_provider"] == "google.com", payload
    assert sorted(get_signin_methods(emu, user["email"])) == ["google.com", "password"]


def test_should_copy_idp_email_to_user_level_email_if_not_present(emu):
    """idp.spec.ts: should copy IDP email to user-level email if not present"""
    guest = expect_ok(call(emu, "signUp", {"returnSecureToken": True}))  # the emulator starts from a phone user
    claims = fake_claims(sub=unique_sub(), name="Foo", email=unique_email("example", "google.com"))
    body = expect_ok(call(emu, "signInWithIdp", idp_body(
        "google.com", json.dumps(claims), idToken=guest["idToken"], returnIdpCredential=True)))
    assert not body.get("isNewUser") and body["localId"] == guest["localId"], body
    assert isinstance(body.get("refreshToken"), str), body
    payload = decode_jwt(body["idToken"])["payload"]
    assert payload["firebase"]["identities"] == {"google.com": [claims["sub"]], "email": [claims["email"]]}, payload
    assert payload["firebase"]["sign_in_provider"] == "google.com", payload
    info = get_account_info_by_id_token(emu, body["idToken"])
    assert info["email"] == claims["email"] and not info.get("emailVerified"), info


def test_should_error_if_user_to_be_linked_is_disabled(emu):
    """idp.spec.ts: should error if user to be linked is disabled"""
    user = register_user(emu, unique_email("foo"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    token = json.dumps(fake_claims(sub=unique_sub(), name="Foo"))
    resp = call(emu, "signInWithIdp", idp_body("google.com", token, idToken=user["idToken"], returnIdpCredential=True))
    expect_error(resp, "USER_DISABLED")


@pytest.mark.parametrize("family", FAMILIES)
def test_should_return_error_if_idp_account_is_already_linked_to_the_same_user(emu, family):
    """idp.spec.ts: should return error if IDP account is already linked to the same user"""
    claims = {"sub": unique_sub(), "email": unique_email("alice"), "email_verified": False}
    user = sign_in_with_fake_claims(emu, "google.com", claims)
    token = json.dumps(claims)
    body = expect_ok(call(emu, "signInWithIdp", idp_body(
        "google.com", token, idToken=user["idToken"], returnIdpCredential=True), family=family))
    assert "localId" not in body and "refreshToken" not in body and "idToken" not in body, body
    assert body["errorMessage"] == "FEDERATED_USER_ID_ALREADY_LINKED", body
    assert body["oauthIdToken"] == token, body


def test_should_return_error_if_idp_account_is_already_linked_to_another_user(emu):
    """idp.spec.ts: should return error if IDP account is already linked to another user"""
    claims = {"sub": unique_sub(), "email": unique_email("alice"), "email_verified": False}
    sign_in_with_fake_claims(emu, "google.com", claims)
    user = register_user(emu, unique_email("foo"), PASSWORD)
    resp = call(emu, "signInWithIdp", idp_body("google.com", json.dumps(claims), idToken=user["idToken"]))
    expect_error(resp, "FEDERATED_USER_ID_ALREADY_LINKED")
    assert get_signin_methods(emu, user["email"]) == ["password"]
    assert get_signin_methods(emu, claims["email"]) == ["google.com"]


@pytest.mark.parametrize("family", FAMILIES)
def test_should_return_error_if_idp_account_email_already_exists_if_not_allow_duplicate_email(emu, family):
    """idp.spec.ts: should return error if IDP account email already exists if NOT allowDuplicateEmail"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    guest = expect_ok(call(emu, "signUp", {"returnSecureToken": True}))
    token = json.dumps(fake_claims(sub=unique_sub(), email=email))
    expect_error(call(emu, "signInWithIdp", idp_body("google.com", token, idToken=guest["idToken"]), family=family),
                 "EMAIL_EXISTS")
    # The same for a user with an address of its own (the emulator's rule does not look at the linking user's).
    other = register_user(emu, unique_email("bob"), PASSWORD)
    expect_error(call(emu, "signInWithIdp", idp_body("google.com", token, idToken=other["idToken"]), family=family),
                 "EMAIL_EXISTS")
    assert get_signin_methods(emu, other["email"]) == ["password"]
    # With returnIdpCredential the refusal comes back beside the credential, with no tokens.
    body = expect_ok(call(emu, "signInWithIdp", idp_body(
        "google.com", token, idToken=other["idToken"], returnIdpCredential=True), family=family))
    assert body["errorMessage"] == "EMAIL_EXISTS" and body["oauthIdToken"] == token, body
    assert "idToken" not in body and "refreshToken" not in body and "localId" not in body, body


def test_should_allow_linking_idp_account_with_same_email_to_same_user(emu):
    """idp.spec.ts: should allow linking IDP account with same email to same user"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    token = json.dumps(fake_claims(sub=unique_sub(), email=user["email"], email_verified=True))
    body = expect_ok(call(emu, "signInWithIdp", idp_body("google.com", token, idToken=user["idToken"])))
    assert body["localId"] == user["localId"], body
    assert get_account_info_by_id_token(emu, body["idToken"])["emailVerified"] is True

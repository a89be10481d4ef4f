"""Ported from firebase-tools src/emulator/auth/misc.spec.ts: "token refresh" (the Secure Token
API, `POST /securetoken.googleapis.com/v1/token`) and "accounts:lookup".

Adapted: cases that start from an anonymous user start from an email/password user. The
emulator's refresh tokens are its own base64 JSON records, which the "different project" and
"without required fields" cases forge; Herald's tokens are opaque, so the first takes a real
refresh token minted by another Herald (another project) and the second a tampered one. A refresh
token of a deleted account is `USER_NOT_FOUND` in Herald (as in production), where the emulator
answers `INVALID_REFRESH_TOKEN`.

"should return user by tenantId in idToken" is ported without the tenant (a lookup by idToken).

Skipped there: "should exchange refresh tokens for new tokens in a tenant project", "should
error if auth is disabled" (tenants); "should return
providerUserInfo for phone auth users" (phone); the "createSessionCookie", "accounts:query" and
"emulator utility APIs" groups (session cookies, batch listing and emulator config endpoints are
not part of Herald's email surface).
"""

from __future__ import annotations

import pytest

from compat_support import (
    FAMILIES, call, decode_jwt, delete_account, expect_error, expect_ok, get_account_info_by_id_token,
    next_second, register_user, token_call, unique_email, update_account_by_local_id,
)

PASSWORD = "notasecret"


def _check_token_answer(body: dict, local_id: str) -> None:
    assert isinstance(body.get("id_token"), str), body
    assert body["access_token"] == body["id_token"], body
    assert isinstance(body.get("refresh_token"), str), body
    assert isinstance(body.get("expires_in"), str) and body["expires_in"].isdigit(), body
    # The emulator answers its fake project number "12345"; Herald answers a project of its own.
    assert isinstance(body.get("project_id"), str) and body["project_id"], body
    assert body["token_type"] == "Bearer", body
    assert body["user_id"] == local_id, body


# --------------------------------------------------------------------------- token refresh
@pytest.mark.parametrize("path", ["/securetoken.googleapis.com/v1/token", "/v1/token"])
def test_should_exchange_refresh_token_for_new_tokens(emu, path):
    """misc.spec.ts: should exchange refresh token for new tokens"""
    # Adapted: an email/password user instead of an anonymous one.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    # snake_case parameters also work, per OAuth 2.0 spec (the emulator's exact form body).
    resp = token_call(emu, form={"refresh_token": user["refreshToken"], "grantType": "refresh_token"}, path=path)
    _check_token_answer(expect_ok(resp), user["localId"])


def test_should_populate_auth_time_to_match_last_login_at_in_seconds_since_epoch(emu):
    """misc.spec.ts: should populate auth_time to match lastLoginAt (in seconds since epoch)"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    next_second()  # getClock().tick(2000): wait before refreshing.

    body = expect_ok(token_call(emu, form={"refresh_token": user["refreshToken"], "grantType": "refresh_token"}))
    id_token = body["id_token"]
    info = get_account_info_by_id_token(emu, id_token)
    assert info.get("lastLoginAt") is not None, info
    last_login_at_seconds = int(info["lastLoginAt"]) // 1000
    decoded = decode_jwt(id_token)
    # Difference: Herald signs its tokens (RS256); the emulator's are alg "none".
    assert decoded["header"]["alg"] == "RS256", decoded["header"]
    # This should match login time, not token refresh time.
    assert decoded["payload"]["auth_time"] == last_login_at_seconds, (decoded["payload"], info)
    assert decoded["payload"]["iat"] > decoded["payload"]["auth_time"], decoded["payload"]


def test_should_error_if_grant_type_is_missing(emu):
    """misc.spec.ts: should error if grant type is missing"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(token_call(emu, form={"refresh_token": user["refreshToken"]}), "MISSING_GRANT_TYPE", contains=True)


def test_should_error_if_grant_type_is_not_refresh_token(emu):
    """misc.spec.ts: should error if grant type is not refresh_token"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(token_call(emu, form={"refresh_token": user["refreshToken"], "grantType": "other_grant_type"}),
                 "INVALID_GRANT_TYPE", contains=True)


def test_should_error_if_refresh_token_is_missing(emu):
    """misc.spec.ts: should error if refresh token is missing"""
    expect_error(token_call(emu, form={"grantType": "refresh_token"}), "MISSING_REFRESH_TOKEN", contains=True)


def test_should_error_on_malformed_refresh_tokens(emu):
    """misc.spec.ts: should error on malformed refresh tokens"""
    expect_error(token_call(emu, form={"refresh_token": "malformedToken", "grantType": "refresh_token"}),
                 "INVALID_REFRESH_TOKEN", contains=True)


def test_should_error_if_user_is_disabled(emu):
    """misc.spec.ts: should error if user is disabled"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    update_account_by_local_id(emu, user["localId"], {"disableUser": True})
    expect_error(token_call(emu, form={"refreshToken": user["refreshToken"], "grantType": "refresh_token"}),
                 "USER_DISABLED")


def test_should_error_when_refresh_tokens_are_from_a_different_project(emu, compat_server):
    """misc.spec.ts: should error when refresh tokens are from a different project"""
    # Adapted: a genuine refresh token of another Herald serving another project.
    other = compat_server(project={"id": "not-matching-project-id", "apiKey": "other-api-key"},
                          links={"actionUrl": "https://not-matching-project-id.firebaseapp.com/__/auth/action"})
    resp = call(other, "signUp", {"email": unique_email("alice"), "password": PASSWORD}, key="other-api-key")
    foreign = expect_ok(resp)["refreshToken"]
    expect_error(token_call(emu, form={"refresh_token": foreign, "grantType": "refresh_token"}),
                 "INVALID_REFRESH_TOKEN")


def test_should_error_on_refresh_tokens_without_required_fields(emu):
    """misc.spec.ts: should error on refresh tokens without required fields"""
    # Adapted: a real refresh token with its middle altered (Herald's tokens are opaque).
    token = register_user(emu, unique_email("alice"), PASSWORD)["refreshToken"]
    middle = len(token) // 2
    tampered = token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1:]
    expect_error(token_call(emu, form={"refresh_token": tampered, "grantType": "refresh_token"}),
                 "INVALID_REFRESH_TOKEN")


def test_should_error_if_the_refresh_token_is_for_a_user_that_does_not_exist(emu):
    """misc.spec.ts: should error if the refresh token is for a user that does not exist"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    delete_account(emu, {"idToken": user["idToken"]})
    # Difference: USER_NOT_FOUND as in production (the emulator answers INVALID_REFRESH_TOKEN).
    expect_error(token_call(emu, form={"refresh_token": user["refreshToken"], "grantType": "refresh_token"}),
                 "USER_NOT_FOUND")


# --------------------------------------------------------------------------- accounts:lookup
LOOKUP_FAMILIES = ["v1p", "v3"]  # the emulator's lookup cases use the project-scoped v1 path


@pytest.mark.parametrize("family", LOOKUP_FAMILIES)
def test_should_return_user_by_email_when_privileged(emu, family):
    """misc.spec.ts: should return user by email when privileged"""
    email = register_user(emu, unique_email("bob"), "password")["email"]
    body = expect_ok(call(emu, "lookup", {"email": [email]}, family=family, admin=True))
    assert len(body.get("users") or []) == 1, body
    assert body["users"][0]["email"] == email


def test_should_return_user_by_email_even_when_uppercased(emu):
    """misc.spec.ts: should return user by email even when uppercased"""
    email = register_user(emu, unique_email("foo"), "password")["email"]
    body = expect_ok(call(emu, "lookup", {"email": [email.upper()]}, family="v1p", admin=True))
    assert len(body.get("users") or []) == 1, body
    assert body["users"][0]["email"] == email


def test_should_return_empty_result_when_email_is_not_found(emu):
    """misc.spec.ts: should return empty result when email is not found"""
    body = expect_ok(call(emu, "lookup", {"email": [unique_email("non-existent-email")]}, family="v1p", admin=True))
    assert "users" not in body, body


@pytest.mark.parametrize("family", LOOKUP_FAMILIES)
def test_should_return_user_by_local_id_when_privileged(emu, family):
    """misc.spec.ts: should return user by localId when privileged"""
    # Adapted: an email/password user instead of an anonymous one.
    local_id = register_user(emu, unique_email("alice"), PASSWORD)["localId"]
    body = expect_ok(call(emu, "lookup", {"localId": [local_id]}, family=family, admin=True))
    assert len(body.get("users") or []) == 1, body
    assert body["users"][0]["localId"] == local_id


def test_should_deduplicate_users(emu):
    """misc.spec.ts: should deduplicate users"""
    # Adapted: an email/password user instead of an anonymous one.
    local_id = register_user(emu, unique_email("alice"), PASSWORD)["localId"]
    body = expect_ok(call(emu, "lookup", {"localId": [local_id, local_id]}, family="v1p", admin=True))
    assert len(body.get("users") or []) == 1, body
    assert body["users"][0]["localId"] == local_id


def test_should_return_empty_result_when_local_id_is_not_found(emu):
    """misc.spec.ts: should return empty result when localId is not found"""
    body = expect_ok(call(emu, "lookup", {"localId": ["noSuchId"]}, family="v1p", admin=True))
    assert "users" not in body, body


@pytest.mark.parametrize("family", FAMILIES)
def test_lookup_by_id_token_answers_the_tokens_user(emu, family):
    """misc.spec.ts: should return user by tenantId in idToken (without the tenant)"""
    # Adapted: the lookup-by-idToken half of the case; tenants are out of scope.
    user = register_user(emu, unique_email("alice"), PASSWORD)
    body = expect_ok(call(emu, "lookup", {"idToken": user["idToken"]}, family=family))
    assert len(body.get("users") or []) == 1, body
    assert body["users"][0]["localId"] == user["localId"]


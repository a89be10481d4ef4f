"""Ported from firebase-tools src/emulator/auth/deleteAccount.spec.ts ("accounts:delete").

Skipped there: the second "should delete the user of the idToken", which is about a tenant with
auth disabled (tenants).
"""

from __future__ import annotations

import pytest

from compat_support import (
    FAMILIES, call, expect_error, expect_ok, expect_user_not_exists_for_id_token, get_signin_methods, register_user,
    sign_in_with_fake_claims, unique_email, unique_sub,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_delete_the_user_of_the_id_token(emu, family):
    """deleteAccount.spec.ts: should delete the user of the idToken"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_ok(call(emu, "delete", {"idToken": user["idToken"]}, family=family))
    expect_user_not_exists_for_id_token(emu, user["idToken"], family=family)


def test_should_error_when_trying_to_delete_by_local_id_without_oauth(emu):
    """deleteAccount.spec.ts: should error when trying to delete by localId without OAuth"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(call(emu, "delete", {"localId": user["localId"]}), "MISSING_ID_TOKEN")
    # Nothing was deleted.
    expect_ok(call(emu, "lookup", {"idToken": user["idToken"]}))


@pytest.mark.parametrize("family", FAMILIES)
def test_should_delete_the_user_by_local_id_if_oauth_credentials_are_present(emu, family):
    """deleteAccount.spec.ts: should delete the user by localId if OAuth credentials are present"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_ok(call(emu, "delete", {"localId": user["localId"]}, family=family, admin=True))
    expect_user_not_exists_for_id_token(emu, user["idToken"], family=family)


def test_should_error_if_missing_local_id_when_oauth_credentials_are_present(emu):
    """deleteAccount.spec.ts: should error if missing localId when OAuth credentials are present"""
    user = register_user(emu, unique_email("alice"), PASSWORD)
    expect_error(call(emu, "delete", {"idToken": user["idToken"]}, admin=True), "MISSING_LOCAL_ID")


def test_should_remove_federated_accounts_for_user(emu):
    """deleteAccount.spec.ts: should remove federated accounts for user"""
    email, sub = unique_email("alice"), unique_sub()
    user = sign_in_with_fake_claims(emu, "google.com", {"sub": sub, "email": email})
    body = expect_ok(call(emu, "delete", {"idToken": user["idToken"]}))
    assert "error" not in body, body
    assert get_signin_methods(emu, email) == []
    again = sign_in_with_fake_claims(emu, "google.com", {"sub": sub, "email": email})
    assert again["localId"] != user["localId"]

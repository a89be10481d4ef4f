"""Ported from firebase-tools src/emulator/auth/createAuthUri.spec.ts ("accounts:createAuthUri").

"Improved email privacy enabled" is Herald's `server.enumerationProtection: true` (the
`emu_protected` server). Skipped there: "should not list IDP sign-in methods when
allowDuplicateEmails" (Herald keeps one account per address), "should error if auth is disabled"
(tenants).
"""

from __future__ import annotations

import pytest

from compat_support import (
    FAMILIES, call, expect_error, expect_ok, register_user, sign_in_with_email_link, sign_in_with_fake_claims,
    unique_email, unique_sub,
)

PASSWORD = "notasecret"


@pytest.mark.parametrize("family", FAMILIES)
def test_should_report_not_registered_user_as_not_registered(emu, family):
    """createAuthUri.spec.ts: should report not registered user as not registered"""
    body = expect_ok(call(emu, "createAuthUri", {"continueUri": "http://example.com/",
                                                 "identifier": unique_email("notregistered")}, family=family))
    assert body["registered"] is False, body
    assert isinstance(body.get("sessionId"), str), body


def test_should_not_show_registered_field_with_improved_email_privacy_enabled(emu_protected):
    """createAuthUri.spec.ts: should not show registered field with improved email privacy enabled"""
    body = expect_ok(call(emu_protected, "createAuthUri", {"continueUri": "http://example.com/",
                                                           "identifier": unique_email("notregistered")}))
    assert "registered" not in body, body
    assert isinstance(body.get("sessionId"), str), body


@pytest.mark.parametrize("family", FAMILIES)
def test_should_return_providers_for_a_registered_user(emu, family):
    """createAuthUri.spec.ts: should return providers for a registered user"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    body = expect_ok(call(emu, "createAuthUri", {"continueUri": "http://example.com/", "identifier": email},
                          family=family))
    assert body["registered"] is True, body
    assert body["allProviders"] == ["password"], body
    assert body["signinMethods"] == ["password"], body
    assert isinstance(body.get("sessionId"), str), body


def test_should_not_return_providers_for_a_registered_user_with_improved_email_privacy_enabled(emu_protected):
    """createAuthUri.spec.ts: should not return providers for a registered user with improved email privacy enabled"""
    email = unique_email("alice")
    register_user(emu_protected, email, PASSWORD)
    body = expect_ok(call(emu_protected, "createAuthUri", {"continueUri": "http://example.com/", "identifier": email}))
    assert "registered" not in body, body
    assert "allProviders" not in body, body
    assert "signinMethods" not in body, body
    assert isinstance(body.get("sessionId"), str), body


def test_should_return_existing_session_id_if_provided(emu):
    """createAuthUri.spec.ts: should return existing sessionId if provided"""
    body = expect_ok(call(emu, "createAuthUri", {"continueUri": "http://example.com/",
                                                 "identifier": unique_email("notregistered"),
                                                 "sessionId": "my-session-1"}))
    assert body["registered"] is False, body
    assert body["sessionId"] == "my-session-1", body


def test_should_find_user_by_email_ignoring_case(emu):
    """createAuthUri.spec.ts: should find user by email ignoring case"""
    email = unique_email("alice")
    register_user(emu, email, PASSWORD)
    local, domain = email.split("@")
    mixed = local[:1].upper() + local[1:] + "@" + domain.upper()  # like "AlIcE@exAMPle.COM"
    body = expect_ok(call(emu, "createAuthUri", {"continueUri": "http://example.com/", "identifier": mixed}))
    assert body["registered"] is True, body


def test_should_error_if_identifier_or_continue_uri_is_not_provided(emu):
    """createAuthUri.spec.ts: should error if identifier or continueUri is not provided"""
    expect_error(call(emu, "createAuthUri", {"continueUri": "http://example.com/"}), "MISSING_IDENTIFIER")
    expect_error(call(emu, "createAuthUri", {"identifier": "me@example.com"}), "MISSING_CONTINUE_URI")


def test_should_error_if_identifier_is_invalid(emu):
    """createAuthUri.spec.ts: should error if identifier is invalid"""
    expect_error(call(emu, "createAuthUri", {"identifier": "invalid", "continueUri": "http://localhost/"}),
                 "INVALID_IDENTIFIER")


def test_should_error_if_continue_uri_is_invalid(emu):
    """createAuthUri.spec.ts: should error if continueUri is invalid"""
    expect_error(call(emu, "createAuthUri", {"identifier": "me@example.com", "continueUri": "invalid"}),
                 "INVALID_CONTINUE_URI")


@pytest.mark.parametrize("family", FAMILIES)
def test_should_find_user_by_either_idp_email_or_top_level_email(emu, family):
    """createAuthUri.spec.ts: should find user by either IDP email or 'top-level' email"""
    email, email_at_provider = unique_email("bob"), unique_email("alice")
    user = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_sub(), "email": email_at_provider})
    sign_in_with_email_link(emu, email, user["idToken"])
    for identifier in (email, email_at_provider):
        body = expect_ok(call(emu, "createAuthUri", {"continueUri": "http://example.com/", "identifier": identifier},
                              family=family))
        assert body["registered"] is True, body
        assert sorted(body["allProviders"]) == ["google.com", "password"], body
        assert sorted(body["signinMethods"]) == ["emailLink", "google.com"], body

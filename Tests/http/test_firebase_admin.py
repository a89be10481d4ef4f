"""The real firebase-admin Python SDK against `herald serve`, the way a team
moving off Firebase would point it there: FIREBASE_AUTH_EMULATOR_HOST, which
makes the SDK send `Authorization: Bearer owner` to project-scoped paths.
Sessions made over HTTP (signInWithPassword, email links) meet the SDK's
revoke_refresh_tokens, verify_id_token and user management; refresh tokens are
redeemed at securetoken (`/securetoken.googleapis.com/v1/token`)."""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from firebase_admin import auth, exceptions

from helpers import ACTION_URL, API_KEY, OOB_CODE_RE, parse_link, row_count
from http_support import HTTP_TIMEOUT, PROJECT, assert_error, code_of, ok, unique_email

FINISH = "https://app.example.com/finish"
PASSWORD = "admin-sdk-pw-1"
NEW_PASSWORD = "admin-sdk-pw-2"
SECURETOKEN = "/securetoken.googleapis.com/v1/token"
# What verify_id_token(check_revoked=True) and the user-management tests need of Herald.
SDK_SERVER = {"allowEmulatorOwner": True, "emulatorMode": True}


def full_settings(**overrides) -> auth.ActionCodeSettings:
    values = dict(url=FINISH, handle_code_in_app=True, ios_bundle_id="com.example.ios",
                  android_package_name="com.example.android", android_install_app=True,
                  android_minimum_version="12", link_domain="app.example.com")
    values.update(overrides)
    return auth.ActionCodeSettings(**values)


def check_link(link: str, mode: str, continue_url) -> dict:
    parsed = parse_link(link)
    assert parsed["base"] == ACTION_URL, link
    params = parsed["params"]
    assert params["mode"] == mode and params["apiKey"] == API_KEY and params["lang"] == "en", link
    assert OOB_CODE_RE.fullmatch(params["oobCode"]), link
    assert params.get("continueUrl") == continue_url, link
    return parsed


def test_generated_links_have_firebases_shape_and_work(server, admin_app):
    srv = server(server={"allowEmulatorOwner": True})
    app = admin_app(srv)
    email = unique_email("sdk-links")
    user = auth.create_user(email=email, password=PASSWORD, app=app)

    sign_in = auth.generate_sign_in_with_email_link(email, full_settings(), app=app)
    assert sign_in.startswith("https://app.example.com/__/auth/links?link="), sign_in
    parsed = check_link(sign_in, "signIn", FINISH)
    assert parsed["wrapper"]["host"] == "app.example.com"

    verify = auth.generate_email_verification_link(email, app=app)
    check_link(verify, "verifyEmail", None)
    verify_back = auth.generate_email_verification_link(email, auth.ActionCodeSettings(url=FINISH), app=app)
    check_link(verify_back, "verifyEmail", FINISH)

    reset = auth.generate_password_reset_link(email, auth.ActionCodeSettings(url=FINISH), app=app)
    assert parse_link(reset)["wrapper"] is None
    check_link(reset, "resetPassword", FINISH)

    time.sleep(0.5)
    assert srv.capture.received_count == 0, "generated links are returned, never mailed"

    # The links are real: each code redeems.
    code = lambda link: parse_link(link)["params"]["oobCode"]  # noqa: E731
    ok(srv.post("accounts:update", {"oobCode": code(verify_back)}))
    assert auth.get_user(user.uid, app=app).email_verified is True
    ok(srv.post("accounts:resetPassword", {"oobCode": code(reset), "newPassword": "sdk-new-pw-2"}))
    ok(srv.sign_in(email, "sdk-new-pw-2"))
    body = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code(sign_in)}))
    assert body["localId"] == user.uid and body["isNewUser"] is False


def test_user_management_round_trip(server, admin_app):
    srv = server(server={"allowEmulatorOwner": True})
    app = admin_app(srv)
    email = unique_email("sdk-user")

    created = auth.create_user(email=email, password=PASSWORD, display_name="Ada", app=app)
    assert created.uid and created.email == email and created.display_name == "Ada"
    assert created.email_verified is False and created.disabled is False
    assert "password" in [p.provider_id for p in created.provider_data]
    assert created.user_metadata.creation_timestamp > 0
    ok(srv.sign_in(email, PASSWORD))

    fetched = auth.get_user_by_email(email, app=app)
    assert fetched.uid == created.uid
    assert auth.get_user(created.uid, app=app).email == email
    with pytest.raises(auth.EmailAlreadyExistsError):
        auth.create_user(email=email, password=PASSWORD, app=app)

    updated = auth.update_user(created.uid, display_name="Ada Lovelace", email_verified=True, app=app)
    assert updated.uid == created.uid
    assert updated.display_name == "Ada Lovelace" and updated.email_verified is True
    again = auth.get_user_by_email(email, app=app)
    assert again.display_name == "Ada Lovelace" and again.email_verified is True

    auth.update_user(created.uid, disabled=True, app=app)
    assert auth.get_user(created.uid, app=app).disabled is True

    auth.delete_user(created.uid, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user_by_email(email, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(created.uid, app=app)


def test_herald_errors_surface_as_the_sdks_typed_exceptions(server, admin_app):
    srv = server(server={"allowEmulatorOwner": True})
    app = admin_app(srv)
    email = unique_email("sdk-errors")
    auth.create_user(email=email, password=PASSWORD, app=app)

    with pytest.raises(exceptions.InvalidArgumentError) as info:
        auth.generate_password_reset_link(email, auth.ActionCodeSettings(url="https://evil.example/finish"), app=app)
    assert "UNAUTHORIZED_DOMAIN" in str(info.value)
    with pytest.raises(exceptions.InvalidArgumentError) as info:
        auth.generate_sign_in_with_email_link(email, full_settings(url="https://evil.example/finish"), app=app)
    assert "UNAUTHORIZED_DOMAIN" in str(info.value)

    with pytest.raises(auth.InvalidHostingLinkDomainError):
        auth.generate_sign_in_with_email_link(email, full_settings(link_domain="links.evil.example"), app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.generate_email_verification_link(unique_email("sdk-ghost"), app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.update_user("no-such-uid", display_name="x", app=app)


def test_owner_credential_is_refused_unless_allowed(server, admin_app):
    srv = server()  # allowEmulatorOwner: false (the default)
    app = admin_app(srv)
    email = unique_email("sdk-refused")
    ok(srv.admin("accounts", {"email": email, "password": PASSWORD}))

    with pytest.raises(exceptions.FirebaseError) as info:
        auth.get_user_by_email(email, app=app)
    assert not isinstance(info.value, auth.UserNotFoundError), "refused, not answered"
    with pytest.raises(exceptions.FirebaseError):
        auth.generate_password_reset_link(email, app=app)
    with pytest.raises(exceptions.FirebaseError):
        auth.create_user(email=unique_email("sdk-sneaky"), password=PASSWORD, app=app)
    with pytest.raises(exceptions.FirebaseError):
        auth.delete_user(srv.admin_user(email)["localId"], app=app)
    assert row_count(srv.db_path, "accounts") == 1
    assert srv.admin_user(email) is not None


# --------------------------------------------------------------------------- sessions meet the SDK
def refresh(srv, refresh_token: str) -> requests.Response:
    """The securetoken exchange as the client SDKs make it (form-encoded, API key)."""
    return requests.post(srv.url + SECURETOKEN, params={"key": API_KEY}, timeout=HTTP_TIMEOUT,
                         data={"grant_type": "refresh_token", "refresh_token": refresh_token})


def refresh_ok(srv, refresh_token: str, uid: str) -> dict:
    resp = refresh(srv, refresh_token)
    assert resp.status_code == 200, f"securetoken refresh -> {resp.status_code}\n{resp.text[:2000]}"
    body = resp.json()
    assert body.get("user_id") == uid and body.get("id_token") and body.get("refresh_token"), body
    return body


def refresh_refused(srv, refresh_token: str, code: str) -> None:
    resp = refresh(srv, refresh_token)
    assert resp.status_code == 400, f"expected 400 {code}, got {resp.status_code}\n{resp.text[:2000]}"
    try:
        error = resp.json()["error"]
    except (ValueError, KeyError, TypeError):
        pytest.fail(f"no Firebase error envelope: {resp.text[:2000]}")
    message = error.get("message")
    assert error.get("code") == 400, error
    assert message == code or (isinstance(message, str) and message.startswith(code + " : ")), \
        f"expected {code}: {error}"


def after_second_of(moment: int) -> None:
    """Wait (at most a second) until the clock is past Unix second `moment`: the SDK's
    revoke_refresh_tokens sends whole seconds and check_revoked compares iat * 1000 with them."""
    while int(time.time()) <= moment:
        time.sleep(0.02)


def test_create_user_with_every_field_then_update_get_and_delete(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    uid = f"sdk-{uuid.uuid4().hex[:12]}"
    email, moved = unique_email("sdk-full"), unique_email("sdk-full-moved")

    created = auth.create_user(uid=uid, email=email, password=PASSWORD, display_name="Grace",
                               email_verified=True, disabled=True, app=app)
    assert (created.uid, created.email, created.display_name) == (uid, email, "Grace")
    assert created.email_verified is True and created.disabled is True
    for fetched in (auth.get_user(uid, app=app), auth.get_user_by_email(email, app=app)):
        assert (fetched.uid, fetched.email, fetched.display_name) == (uid, email, "Grace")
        assert fetched.email_verified is True and fetched.disabled is True
    assert_error(srv.sign_in(email, PASSWORD), "USER_DISABLED")
    with pytest.raises(auth.UidAlreadyExistsError):
        auth.create_user(uid=uid, email=unique_email("sdk-same-uid"), password=PASSWORD, app=app)

    updated = auth.update_user(uid, disabled=False, display_name="Grace Hopper", password=NEW_PASSWORD, app=app)
    assert updated.disabled is False and updated.display_name == "Grace Hopper"
    signed_in = ok(srv.sign_in(email, NEW_PASSWORD))
    assert signed_in["localId"] == uid
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")

    auth.update_user(uid, email=moved, app=app)
    assert auth.get_user_by_email(moved, app=app).uid == uid
    assert auth.get_user(uid, app=app).email == moved
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user_by_email(email, app=app)
    ok(srv.sign_in(moved, NEW_PASSWORD))

    auth.delete_user(uid, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(uid, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user_by_email(moved, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.delete_user(uid, app=app)
    assert_error(srv.sign_in(moved, NEW_PASSWORD), "INVALID_LOGIN_CREDENTIALS")


def test_generated_links_complete_over_http_and_sessions_follow(server, admin_app):
    """Verification, sign-in and reset links from the SDK, completed over HTTP, with the
    sessions they touch: verifying keeps them (and shows in the next token), signing in by
    link makes one, the reset ends them all."""
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    email = unique_email("sdk-flow")
    uid = auth.create_user(email=email, password=PASSWORD, app=app).uid
    first = ok(srv.sign_in(email, PASSWORD))
    assert auth.verify_id_token(first["idToken"], app=app)["email_verified"] is False

    verify = auth.generate_email_verification_link(email, auth.ActionCodeSettings(url=FINISH), app=app)
    ok(srv.post("accounts:update", {"oobCode": code_of(verify)}))
    assert auth.get_user(uid, app=app).email_verified is True
    after_verify = refresh_ok(srv, first["refreshToken"], uid)
    claims = auth.verify_id_token(after_verify["id_token"], app=app)
    assert claims["uid"] == uid and claims["email_verified"] is True

    sign_in = auth.generate_sign_in_with_email_link(email, full_settings(), app=app)
    by_link = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code_of(sign_in)}))
    assert by_link["localId"] == uid
    claims = auth.verify_id_token(by_link["idToken"], app=app)
    assert claims["uid"] == uid and claims["email"] == email
    assert claims["firebase"]["sign_in_provider"] == "password"
    refresh_ok(srv, by_link["refreshToken"], uid)
    refresh_ok(srv, first["refreshToken"], uid)

    reset = auth.generate_password_reset_link(email, auth.ActionCodeSettings(url=FINISH), app=app)
    ok(srv.post("accounts:resetPassword", {"oobCode": code_of(reset), "newPassword": NEW_PASSWORD}))
    refresh_refused(srv, first["refreshToken"], "TOKEN_EXPIRED")
    refresh_refused(srv, by_link["refreshToken"], "TOKEN_EXPIRED")
    again = ok(srv.sign_in(email, NEW_PASSWORD))
    refresh_ok(srv, again["refreshToken"], uid)


def test_revoke_refresh_tokens_ends_refresh(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    email, other_email = unique_email("sdk-revoke"), unique_email("sdk-revoke-other")
    uid = auth.create_user(email=email, password=PASSWORD, app=app).uid
    other_uid = auth.create_user(email=other_email, password=PASSWORD, app=app).uid
    session = ok(srv.sign_in(email, PASSWORD))
    other = ok(srv.sign_in(other_email, PASSWORD))
    refresh_ok(srv, session["refreshToken"], uid)

    auth.revoke_refresh_tokens(uid, app=app)  # no sleep: a revoke in this second ends what came before
    refresh_refused(srv, session["refreshToken"], "TOKEN_EXPIRED")
    valid_after = auth.get_user(uid, app=app).tokens_valid_after_timestamp
    assert abs(valid_after / 1000 - time.time()) < 5, valid_after

    refresh_ok(srv, other["refreshToken"], other_uid)  # someone else's sessions are untouched
    fresh = ok(srv.sign_in(email, PASSWORD))  # and a new sign-in works at once
    refresh_ok(srv, fresh["refreshToken"], uid)


def test_verify_id_token_and_check_revoked(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    email = unique_email("sdk-verify")
    uid = auth.create_user(email=email, password=PASSWORD, display_name="Ver", app=app).uid
    session = ok(srv.sign_in(email, PASSWORD))
    token = session["idToken"]

    claims = auth.verify_id_token(token, app=app)
    assert claims["uid"] == uid and claims["sub"] == uid and claims["user_id"] == uid
    assert claims["aud"] == PROJECT and claims["iss"] == f"https://securetoken.google.com/{PROJECT}"
    assert claims["email"] == email and claims["email_verified"] is False
    assert claims["firebase"]["sign_in_provider"] == "password"
    assert claims["firebase"]["identities"]["email"] == [email]
    assert claims["exp"] == claims["iat"] + 3600
    assert auth.verify_id_token(token, check_revoked=True, app=app)["uid"] == uid
    refreshed_token = refresh_ok(srv, session["refreshToken"], uid)["id_token"]
    assert auth.verify_id_token(refreshed_token, check_revoked=True, app=app)["uid"] == uid

    # check_revoked compares whole seconds (iat * 1000 < validSince * 1000): revoke in a later second.
    after_second_of(max(claims["iat"], auth.verify_id_token(refreshed_token, app=app)["iat"]))
    auth.revoke_refresh_tokens(uid, app=app)
    for revoked in (token, refreshed_token):
        with pytest.raises(auth.RevokedIdTokenError):
            auth.verify_id_token(revoked, check_revoked=True, app=app)
        assert auth.verify_id_token(revoked, app=app)["uid"] == uid, "without check_revoked it lives out its hour"
    fresh = ok(srv.sign_in(email, PASSWORD))["idToken"]
    assert auth.verify_id_token(fresh, check_revoked=True, app=app)["uid"] == uid

    auth.update_user(uid, disabled=True, app=app)
    with pytest.raises(auth.UserDisabledError):
        auth.verify_id_token(fresh, check_revoked=True, app=app)


def test_disabling_and_deleting_users_end_refresh(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    disabled_email, deleted_email = unique_email("sdk-disabled"), unique_email("sdk-deleted")
    disabled_uid = auth.create_user(email=disabled_email, password=PASSWORD, app=app).uid
    deleted_uid = auth.create_user(email=deleted_email, password=PASSWORD, app=app).uid
    disabled = ok(srv.sign_in(disabled_email, PASSWORD))["refreshToken"]
    deleted = ok(srv.sign_in(deleted_email, PASSWORD))["refreshToken"]
    refresh_ok(srv, disabled, disabled_uid)
    refresh_ok(srv, deleted, deleted_uid)

    auth.update_user(disabled_uid, disabled=True, app=app)
    refresh_refused(srv, disabled, "USER_DISABLED")
    auth.delete_user(deleted_uid, app=app)
    refresh_refused(srv, deleted, "USER_NOT_FOUND")
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(deleted_uid, app=app)


def test_custom_claims_are_set_shown_and_carried_by_id_tokens(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    email = unique_email("sdk-claims")
    user = auth.create_user(email=email, password=PASSWORD, app=app)

    auth.set_custom_user_claims(user.uid, {"role": "admin", "tier": {"level": 3}}, app=app)
    assert auth.get_user(user.uid, app=app).custom_claims == {"role": "admin", "tier": {"level": 3}}
    token = ok(srv.sign_in(email, PASSWORD))["idToken"]
    decoded = auth.verify_id_token(token, app=app)
    assert decoded["role"] == "admin" and decoded["tier"] == {"level": 3} and decoded["uid"] == user.uid

    with pytest.raises(ValueError):  # the SDK refuses reserved claims itself; Herald refuses them too, below
        auth.set_custom_user_claims(user.uid, {"sub": "someone-else"}, app=app)
    assert_error(srv.admin("accounts:update", {"localId": user.uid, "customAttributes": '{"aud":"other"}'}),
                 "FORBIDDEN_CLAIM", message="FORBIDDEN_CLAIM : aud")
    assert_error(srv.post("accounts:update", {"idToken": token, "customAttributes": '{"role":"owner"}'}),
                 "INSUFFICIENT_PERMISSION")

    auth.set_custom_user_claims(user.uid, None, app=app)
    assert auth.get_user(user.uid, app=app).custom_claims is None
    assert "role" not in auth.verify_id_token(ok(srv.sign_in(email, PASSWORD))["idToken"], app=app)


def test_an_administrator_links_a_provider_the_user_then_signs_in_with(server, admin_app):
    """`accounts:update` with `linkProviderUserInfo`, as the Node Admin SDK's `updateUser(uid, {providerToLink})`
    sends it (the Python SDK has no such argument), links a provider user as stated; the Python SDK then lists it,
    and signing in with that identity reaches the account (emulator mode: the emulator's unsigned assertion)."""
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    email, linked_email = unique_email("sdk-link"), unique_email("sdk-linked")
    created = auth.create_user(email=email, password=PASSWORD, app=app)
    provider = {"providerId": "google.com", "rawId": f"g-{uuid.uuid4().hex}", "email": linked_email,
                "displayName": "Linked"}
    ok(srv.admin("accounts:update", {"localId": created.uid, "linkProviderUserInfo": provider}))
    [google] = [p for p in auth.get_user(created.uid, app=app).provider_data if p.provider_id == "google.com"]
    assert google.uid == provider["rawId"] and google.email == linked_email and google.display_name == "Linked"
    claims = '{"sub":"%s","email":"%s"}' % (provider["rawId"], linked_email)
    signed = ok(srv.post("accounts:signInWithIdp", {"postBody": f"providerId=google.com&id_token={claims}",
                                                    "requestUri": "http://localhost", "returnSecureToken": True}))
    assert signed["localId"] == created.uid and "isNewUser" not in signed, signed
    # The same identity cannot go to another account; a provider user needs both ids.
    other = auth.create_user(email=unique_email("sdk-other"), password=PASSWORD, app=app)
    assert_error(srv.admin("accounts:update", {"localId": other.uid, "linkProviderUserInfo": provider}),
                 "FEDERATED_USER_ID_ALREADY_LINKED")
    assert_error(srv.admin("accounts:update", {"localId": other.uid, "linkProviderUserInfo": {"rawId": "x"}}),
                 "MISSING_PROVIDER_ID")


def test_only_an_administrator_links_a_provider_outside_emulator_mode(server):
    """Production takes `linkProviderUserInfo` from administrators only; the emulator (emulator mode) also from the
    account's own user."""
    srv = server()
    user = srv.sign_up(unique_email("self-link"), PASSWORD)
    provider = {"providerId": "google.com", "rawId": f"g-{uuid.uuid4().hex}"}
    assert_error(srv.post("accounts:update", {"idToken": user["idToken"], "linkProviderUserInfo": provider}),
                 "INSUFFICIENT_PERMISSION")
    [account] = ok(srv.lookup(user["idToken"]))["users"]
    assert [p["providerId"] for p in account["providerUserInfo"]] == ["password"], account

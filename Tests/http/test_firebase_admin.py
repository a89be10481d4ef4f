"""The real firebase-admin Python SDK against `herald serve`, the way a team
moving off Firebase would point it there: FIREBASE_AUTH_EMULATOR_HOST, which
makes the SDK send `Authorization: Bearer owner` to project-scoped paths."""

from __future__ import annotations

import time
import uuid

import pytest

import firebase_admin  # a missing package fails collection loudly: see Tests/requirements.txt
from firebase_admin import auth, exceptions

from helpers import ACTION_URL, API_KEY, OOB_CODE_RE, parse_link, row_count
from http_support import PROJECT, ok, unique_email

FINISH = "https://app.example.com/finish"
PASSWORD = "admin-sdk-pw-1"


@pytest.fixture
def admin_app(monkeypatch):
    """Factory: admin_app(srv) -> a firebase_admin.App talking to `srv`."""
    apps: list = []

    def make(srv):
        # Read by the SDK when the app's auth client is first created.
        monkeypatch.setenv("FIREBASE_AUTH_EMULATOR_HOST", f"127.0.0.1:{srv.port}")
        app = firebase_admin.initialize_app(options={"projectId": PROJECT, "httpTimeout": 10},
                                            name=f"herald-{uuid.uuid4().hex}")
        apps.append(app)
        return app

    yield make
    for app in apps:
        firebase_admin.delete_app(app)


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

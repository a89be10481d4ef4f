"""Whole journeys as a user lives them: the API queues mail, the mail carries
the link, the link opens a page, the page (or the app) redeems the code. And
afterwards nothing secret is left on disk or in the logs."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

import requests

from helpers import API_KEY, action_link, parse_link
from http_support import (
    CONTINUE, HTTP_TIMEOUT, KIND, assert_error, hidden_fields, looks_like_html, ok, post_form, unique_email,
)


def reset_password_journey(srv, email: str, old_password: str, new_password: str) -> str:
    """signUp, request a reset with the API key, follow the mailed link, set a new
    password through the page; returns the code."""
    srv.sign_up(email, old_password)
    assert ok(srv.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE)) == \
        {"kind": KIND["sendOobCode"], "email": email}
    [item] = srv.mail_to(email)
    link = action_link(item["message"])
    params = parse_link(link)["params"]
    assert params["mode"] == "resetPassword" and params["apiKey"] == API_KEY

    browser = requests.Session()
    page = browser.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert page.status_code == 200 and looks_like_html(page), page.text[:2000]
    form = post_form(page.text)
    fields = hidden_fields(form)
    assert fields.get("csrfToken"), form
    fields["newPassword"] = new_password
    target = srv.local(requests.compat.urljoin(page.url, form["action"] or page.url))
    done = browser.post(target, data=fields, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert done.status_code in (200, 303), f"{done.status_code}\n{done.text[:2000]}"
    if done.status_code == 303:
        assert done.headers["Location"].startswith("https://app.example.com/finish"), done.headers["Location"]

    assert ok(srv.sign_in(email, new_password))["email"] == email
    assert_error(srv.sign_in(email, old_password), "INVALID_LOGIN_CREDENTIALS")
    return params["oobCode"]


def email_link_journey(srv, email: str) -> str:
    """Request a sign-in link with the API key, follow the mailed link to the app,
    complete sign-in with the code the redirect carries; returns the code."""
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    [item] = srv.mail_to(email)
    link = action_link(item["message"])
    assert parse_link(link)["params"]["mode"] == "signIn"

    resp = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 303, f"{resp.status_code}\n{resp.text[:2000]}"
    location = resp.headers["Location"]
    if urlsplit(location).path == "/__/auth/action":  # it was a /__/auth/links wrapper
        resp = requests.get(srv.local(location), timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code == 303, f"{resp.status_code}\n{resp.text[:2000]}"
        location = resp.headers["Location"]
    assert location.startswith("https://app.example.com/finish"), location
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert query["mode"] == "signIn" and query["apiKey"] == API_KEY and query["step"] == "2"

    body = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": query["oobCode"]}))
    assert body["isNewUser"] is True and body["email"] == email
    [user] = ok(srv.lookup(body["idToken"]))["users"]
    assert user["emailVerified"] is True
    return query["oobCode"]


def test_password_reset_journey_from_the_mail_to_the_new_password(server):
    srv = server()
    reset_password_journey(srv, unique_email("journey"), "journey-old-pw-1", "journey-new-pw-2")


def test_email_link_sign_in_journey_from_the_mail_to_the_app(server):
    srv = server()
    email_link_journey(srv, unique_email("linkjourney"))


def test_journeys_leave_no_plaintext_code_or_password_at_rest_or_in_logs(server):
    srv = server()
    old_password, new_password, guess = "Plaintext-Old-Pw-8361", "Plaintext-New-Pw-4927", "Plaintext-Guess-Pw-5510"
    codes = [
        reset_password_journey(srv, unique_email("secret-reset"), old_password, new_password),
        email_link_journey(srv, unique_email("secret-link")),
    ]
    assert_error(srv.sign_in(unique_email("nobody"), guess), "INVALID_LOGIN_CREDENTIALS")
    passwords = [old_password, new_password, guess]

    def needles() -> list:
        out = []
        for code in codes:
            out.append((f"code {code}", code.encode("ascii")))
            raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
            out.append((f"raw bytes of code {code}", raw))
            out.append((f"secret bytes of code {code}", raw[8:] if len(raw) == 40 else raw))
        for password in passwords:
            out.append((f"password {password}", password.encode("utf-8")))
        return out

    def check(where: str, blob: bytes) -> None:
        for what, needle in needles():
            assert needle not in blob, f"{what} found in {where}"

    assert srv.db_path.exists(), f"no database at {srv.db_path}"
    check("the database files (server running)", srv.database_bytes())
    check("server stderr", srv.stderr_text().encode("utf-8"))
    check("server stdout", srv.stdout_text().encode("utf-8"))
    srv.stop_cleanly()
    check("the database files (server stopped)", srv.database_bytes())
    check("server stderr", srv.stderr_text().encode("utf-8"))
    check("server stdout", srv.stdout_text().encode("utf-8"))

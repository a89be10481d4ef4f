"""The pages a link opens: /__/auth/action (GET shows, POST consumes, CSRF),
/__/auth/links, clicks recorded, localized error pages."""

from __future__ import annotations

import re
import time
from typing import Optional
from urllib.parse import parse_qs, quote, urljoin, urlsplit

import requests

from helpers import ACTION_URL, API_KEY, action_link, parse_link, text_part
from http_support import (
    CONTINUE, HTTP_TIMEOUT, assert_error, code_of, field_names, hidden_fields, looks_like_html, ok,
    post_form, unique_email,
)

PASSWORD = "page-password-1"
NEW_PASSWORD = "page-password-2"
POLISH_LETTERS = re.compile("[ąćęłńóśźżĄĆĘŁŃÓŚŹŻ]")
PERSIAN_LETTERS = re.compile("[\u0600-\u06ff]")
RTL = re.compile(r"""dir\s*=\s*["']?rtl""", re.I)


def show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code} {resp.headers.get('Location', '')}\n{resp.text[:3000]}"


def open_page(srv, session: requests.Session, link: str, agent: Optional[str] = None):
    """GET the link on this server; returns (response, its POST form)."""
    headers = {"User-Agent": agent} if agent else {}
    resp = session.get(srv.local(link), headers=headers, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 200 and looks_like_html(resp), show(resp)
    return resp, post_form(resp.text)


def submit(srv, session: requests.Session, page: requests.Response, form: dict, fields: dict,
           agent: Optional[str] = None) -> requests.Response:
    """POST `fields` where the page's form posts to (made local to this server)."""
    target = srv.local(urljoin(page.url, form["action"] or page.url))
    assert urlsplit(target).path == "/__/auth/action", f"form posts to {form['action']!r}"
    headers = {"User-Agent": agent} if agent else {}
    return session.post(target, data=fields, headers=headers, timeout=HTTP_TIMEOUT, allow_redirects=False)


def assert_redirects_to_continue(resp: requests.Response, continue_url: str = CONTINUE) -> dict:
    assert resp.status_code == 303, show(resp)
    location = urlsplit(resp.headers["Location"])
    expected = urlsplit(continue_url)
    assert (location.scheme, location.netloc, location.path) == (expected.scheme, expected.netloc, expected.path), \
        show(resp)
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    for key, value in parse_qs(expected.query).items():
        assert query.get(key) == value[0], f"continueUrl parameter {key} lost: {resp.headers['Location']}"
    return query


def assert_error_page(resp: requests.Response) -> str:
    assert 400 <= resp.status_code < 500, show(resp)
    assert looks_like_html(resp), show(resp)
    return resp.text


def inspect(srv, code: str) -> requests.Response:
    return srv.post("accounts:resetPassword", {"oobCode": code})


# --------------------------------------------------------------------------- GET never consumes
def test_get_never_consumes_then_post_verifies(server):
    srv = server()
    email = unique_email("verify")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("VERIFY_EMAIL", email, continueUrl=CONTINUE)["oobLink"]
    code = code_of(link)
    session = requests.Session()
    for _ in range(2):
        page, form = open_page(srv, session, link)
        hidden = hidden_fields(form)
        assert hidden.get("oobCode") == code, form
        assert hidden.get("csrfToken"), f"no hidden csrfToken in the form: {form}"
    assert ok(inspect(srv, code))["requestType"] == "VERIFY_EMAIL"
    assert srv.admin_user(email)["emailVerified"] is False

    assert_redirects_to_continue(submit(srv, session, page, form, hidden))
    assert srv.admin_user(email)["emailVerified"] is True
    assert_error(inspect(srv, code), "INVALID_OOB_CODE")
    assert_error_page(session.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False))


def test_verify_without_a_continue_url_shows_a_success_page(server):
    srv = server()
    email = unique_email("plain")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("VERIFY_EMAIL", email)["oobLink"]
    session = requests.Session()
    page, form = open_page(srv, session, link)
    resp = submit(srv, session, page, form, hidden_fields(form))
    assert resp.status_code == 200 and looks_like_html(resp), show(resp)
    assert srv.admin_user(email)["emailVerified"] is True


def test_change_email_page_applies_the_new_address(server):
    srv = server()
    old, new = unique_email("old"), unique_email("new")
    account = srv.sign_up(old, PASSWORD)
    ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=new, continueUrl=CONTINUE))
    link = action_link(srv.mail_to(new)[0]["message"])
    session = requests.Session()
    page, form = open_page(srv, session, link)
    page, form = open_page(srv, session, link)
    assert srv.admin_user(old) is not None
    assert_redirects_to_continue(submit(srv, session, page, form, hidden_fields(form)))
    assert srv.admin_user(old) is None
    user = srv.admin_user(new)
    assert user["localId"] == account["localId"] and user["emailVerified"] is True


def test_an_email_change_mails_the_old_address_a_page_that_restores_it(server):
    """updateEmail: the old address gets a RECOVER_EMAIL mail; its page restores the address, verified,
    and ends the sessions of whoever changed it."""
    srv = server(server={"enumerationProtection": False})
    old, new = unique_email("kept"), unique_email("taken")
    account = srv.sign_up(old, PASSWORD)
    changed = ok(srv.post("accounts:update", {"idToken": account["idToken"], "email": new}))
    assert changed["email"] == new and changed["emailVerified"] is False and changed.get("idToken"), changed
    mail = srv.mail_to(old)
    assert len(mail) == 1, mail
    link = action_link(mail[0]["message"])
    assert parse_link(link)["params"]["mode"] == "recoverEmail", link
    assert new in text_part(mail[0]["message"])
    session = requests.Session()
    page, form = open_page(srv, session, link)
    assert old in page.text and new in page.text, show(page)
    assert srv.admin_user(new) is not None  # a GET changes nothing
    resp = submit(srv, session, page, form, hidden_fields(form))
    assert resp.status_code == 200 and looks_like_html(resp), show(resp)
    assert srv.admin_user(new) is None
    restored = srv.admin_user(old)
    assert restored["localId"] == account["localId"] and restored["emailVerified"] is True
    lookup = srv.lookup(changed["idToken"])
    assert lookup.status_code == 400 and lookup.json()["error"]["message"] == "TOKEN_EXPIRED", show(lookup)


# --------------------------------------------------------------------------- clicks and CSRF
def test_clicks_are_recorded_with_the_user_agent(server):
    srv = server()
    email = unique_email("clicks")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("VERIFY_EMAIL", email)["oobLink"]
    scanner = "Mozilla/5.0 (compatible; HeraldTestLinkScanner/2.1)"
    person = "Mozilla/5.0 (X11; Linux x86_64) HeraldTestBrowser/99"
    session = requests.Session()
    open_page(srv, session, link, agent=scanner)
    open_page(srv, session, link, agent=scanner)
    page, form = open_page(srv, session, link, agent=person)

    clicks = srv.events("click")
    assert [c["user_agent"] for c in clicks] == [scanner, scanner, person], clicks
    assert all("127.0.0.1" in (c["ip"] or "") for c in clicks), clicks
    assert len({c["code_id"] for c in clicks}) == 1, clicks
    assert srv.events("redeemed") == []

    resp = submit(srv, session, page, form, hidden_fields(form), agent=person)
    assert resp.status_code in (200, 303), show(resp)
    [redeemed] = srv.events("redeemed")
    assert redeemed["user_agent"] == person and redeemed["code_id"] == clicks[0]["code_id"]
    assert len(srv.events("click")) == 3, "a POST is a redemption, not a click"


def test_post_without_the_pages_csrf_token_is_forbidden_and_consumes_nothing(server):
    srv = server()
    email = unique_email("csrf")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("VERIFY_EMAIL", email, continueUrl=CONTINUE)["oobLink"]
    other_link = srv.oob("PASSWORD_RESET", email)["oobLink"]
    session = requests.Session()
    page, form = open_page(srv, session, link)
    fields = hidden_fields(form)
    _, other_form = open_page(srv, session, other_link)
    other_token = hidden_fields(other_form)["csrfToken"]
    assert other_token != fields["csrfToken"]

    missing = {k: v for k, v in fields.items() if k != "csrfToken"}
    for attempt in (missing, {**fields, "csrfToken": "forged"}, {**fields, "csrfToken": ""},
                    {**fields, "csrfToken": other_token}):
        resp = submit(srv, session, page, form, attempt)
        assert resp.status_code == 403 and looks_like_html(resp), show(resp)
        # a fresh client (no cookies) with the same fields fares no better
        resp = submit(srv, requests.Session(), page, form, attempt)
        assert resp.status_code == 403, show(resp)
    assert srv.admin_user(email)["emailVerified"] is False
    assert ok(inspect(srv, code_of(link)))["requestType"] == "VERIFY_EMAIL"

    assert_redirects_to_continue(submit(srv, session, page, form, fields))
    assert srv.admin_user(email)["emailVerified"] is True


# --------------------------------------------------------------------------- reset password page
def test_reset_password_page_journey(server):
    srv = server()
    email = unique_email("resetpage")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("PASSWORD_RESET", email, continueUrl=CONTINUE)["oobLink"]
    code = code_of(link)
    session = requests.Session()
    page, form = open_page(srv, session, link)
    page, form = open_page(srv, session, link)
    assert "newPassword" in field_names(form), form
    [password_input] = [i for i in form["inputs"] if i["name"] == "newPassword"]
    assert password_input["type"] == "password"
    fields = hidden_fields(form)
    assert fields.get("oobCode") == code and fields.get("csrfToken")

    weak = submit(srv, session, page, form, {**fields, "newPassword": "123"})
    assert weak.status_code != 303 and weak.status_code < 500, show(weak)
    ok(srv.sign_in(email, PASSWORD))
    ok(inspect(srv, code))

    assert_redirects_to_continue(submit(srv, session, page, form, {**fields, "newPassword": NEW_PASSWORD}))
    ok(srv.sign_in(email, NEW_PASSWORD))
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")
    again = submit(srv, session, page, form, {**fields, "newPassword": "yet-another-pw"})
    assert_error_page(again)
    ok(srv.sign_in(email, NEW_PASSWORD))


# --------------------------------------------------------------------------- sign-in redirect
def test_sign_in_page_redirects_to_the_continue_url_with_the_link_parameters(server):
    srv = server()
    email = unique_email("signinpage")
    link = srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True,
                   headers={"X-Firebase-Locale": "de"})["oobLink"]
    code = code_of(link)
    for _ in range(2):
        resp = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
        query = assert_redirects_to_continue(resp)
        assert query["oobCode"] == code and query["mode"] == "signIn"
        assert query["apiKey"] == API_KEY and query["lang"] == "de"
    body = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": query["oobCode"]}))
    assert body["isNewUser"] is True


def test_action_page_never_redirects_to_an_unauthorized_continue_url(server):
    srv = server()
    email = unique_email("openredirect")
    srv.sign_up(email, PASSWORD)
    evil = "https://evil.example/steal"
    sign_in = parse_link(srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True)["oobLink"])
    params = {**sign_in["params"], "continueUrl": evil}
    resp = requests.get(srv.action_page_url(**params), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert "evil.example" not in resp.headers.get("Location", ""), show(resp)
    assert resp.status_code < 500, show(resp)

    verify = parse_link(srv.oob("VERIFY_EMAIL", email, continueUrl=CONTINUE)["oobLink"])
    session = requests.Session()
    tampered = srv.action_page_url(**{**verify["params"], "continueUrl": evil})
    page = session.get(tampered, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert page.status_code < 500 and "evil.example" not in page.headers.get("Location", ""), show(page)
    if page.status_code == 200:  # a confirm page: its POST must not lead to evil.example either
        form = post_form(page.text)
        resp = submit(srv, session, page, form, {**hidden_fields(form), "continueUrl": evil})
        assert "evil.example" not in resp.headers.get("Location", ""), show(resp)
        assert resp.status_code < 500, show(resp)


# --------------------------------------------------------------------------- error pages
def test_bad_codes_get_an_error_page_in_the_links_language(server):
    srv = server()
    bogus = "B" * 54
    pages = {}
    for lang in ("en", "pl", "fa"):
        for mode in ("verifyEmail", "resetPassword", "signIn"):
            resp = requests.get(srv.action_page_url(mode=mode, oobCode=bogus, apiKey=API_KEY, lang=lang,
                                                    continueUrl=CONTINUE),
                                timeout=HTTP_TIMEOUT, allow_redirects=False)
            pages[lang, mode] = assert_error_page(resp)
    for mode in ("verifyEmail", "resetPassword", "signIn"):
        assert POLISH_LETTERS.search(pages["pl", mode]), f"no Polish text on the {mode} error page"
        assert RTL.search(pages["fa", mode]) and PERSIAN_LETTERS.search(pages["fa", mode]), \
            f"Persian {mode} error page must be right-to-left Persian text"
        assert not RTL.search(pages["en", mode]) and not RTL.search(pages["pl", mode])
        assert not POLISH_LETTERS.search(pages["en", mode])
        assert pages["en", mode] != pages["pl", mode]


def test_used_and_expired_codes_get_an_error_page(server):
    srv = server(links={"lifetime": {"verifyEmail": "1s"}})
    used_email, late_email = unique_email("used"), unique_email("late")
    srv.sign_up(used_email, PASSWORD)
    late = srv.sign_up(late_email, PASSWORD)

    used_link = srv.oob("VERIFY_EMAIL", used_email, headers={"X-Firebase-Locale": "pl"})["oobLink"]
    ok(srv.post("accounts:update", {"oobCode": code_of(used_link)}))
    page = assert_error_page(requests.get(srv.local(used_link), timeout=HTTP_TIMEOUT, allow_redirects=False))
    assert POLISH_LETTERS.search(page), "lang=pl link, Polish error page"

    ok(srv.send_oob("VERIFY_EMAIL", idToken=late["idToken"]))
    late_link = action_link(srv.mail_to(late_email)[0]["message"])
    time.sleep(2)
    assert_error_page(requests.get(srv.local(late_link), timeout=HTTP_TIMEOUT, allow_redirects=False))
    assert_error(inspect(srv, code_of(late_link)), "EXPIRED_OOB_CODE")


def test_pages_escape_what_they_reflect(server):
    srv = server()
    script = '<script>alert("x")</script>'
    for params in (
        {"mode": "verifyEmail", "oobCode": script, "apiKey": API_KEY, "lang": "en"},
        {"mode": script, "oobCode": "C" * 54, "apiKey": API_KEY, "lang": "en"},
        {"mode": "resetPassword", "oobCode": "C" * 54, "apiKey": script, "lang": script, "continueUrl": script},
    ):
        resp = requests.get(srv.action_page_url(**params), timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code < 500, show(resp)
        assert script not in resp.text, show(resp)


# --------------------------------------------------------------------------- /__/auth/links
def test_links_wrapper_redirects_to_the_wrapped_action_link(server):
    srv = server()
    email = unique_email("wrapped")
    link = srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True,
                   linkDomain="app.example.com")["oobLink"]
    parsed = parse_link(link)
    assert parsed["wrapper"] is not None and parsed["wrapper"]["host"] == "app.example.com", link
    inner = parsed["wrapper"]["params"]["link"]

    resp = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 303, show(resp)
    target = parse_link(resp.headers["Location"])
    assert target["base"] == ACTION_URL and target["params"] == parse_link(inner)["params"], show(resp)

    resp = requests.get(f"{srv.url}/__/auth/links?link={quote(inner, safe='')}", timeout=HTTP_TIMEOUT,
                        allow_redirects=False)
    assert resp.status_code == 303 and parse_link(resp.headers["Location"])["params"] == target["params"]


def test_links_wrapper_refuses_links_elsewhere(server):
    srv = server()
    for bad in ("https://evil.example/__/auth/action?mode=signIn&oobCode=x",
                "https://herald-demo.firebaseapp.com.evil.example/__/auth/action?mode=signIn",
                "javascript:alert(1)", "not a url", ""):
        resp = requests.get(f"{srv.url}/__/auth/links?link={quote(bad, safe='')}", timeout=HTTP_TIMEOUT,
                            allow_redirects=False)
        assert resp.status_code == 400, show(resp)
        assert "Location" not in resp.headers, show(resp)
    resp = requests.get(f"{srv.url}/__/auth/links", timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code == 400, show(resp)

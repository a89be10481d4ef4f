"""Continue URLs are read the way browsers read them (issue #10, item 2: the open redirect).

The table `Tests/support/url_table.json` holds a few hundred tricky URLs with what headless Chromium made
of each (`new URL(input)`), recorded by `scripts/record-url-table.py`. Against a live server, for every
row: a continue URL Herald accepts at `sendOobCode` is one whose host Chromium reads as an authorized
domain, and the action page redirects only to Chromium's own serialization of it (`href`), checked again
at redirect time, so a tampered link cannot lead anywhere else either."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import requests

from helpers import API_KEY
from http_support import HTTP_TIMEOUT, assert_error, code_of, hidden_fields, ok, post_form, unique_email

TABLE = json.loads((Path(__file__).resolve().parents[1] / "support" / "url_table.json").read_text(encoding="utf-8"))
ROWS = TABLE["rows"]
AUTHORIZED = {"localhost", "herald-demo.firebaseapp.com", "app.example.com"}
PASSWORD = "redirect-password-1"


def browser_goes_to_authorized(row: dict) -> bool:
    return row["ok"] and row["protocol"] in ("http:", "https:") and row["hostname"] in AUTHORIZED


def test_the_reported_backslash_url_is_refused(server):
    """The probe's request: only the public API key, a reset for a real account, a continue URL that
    Foundation read as app.example.com and browsers as evil.com."""
    srv = server()
    email = unique_email("backslash")
    srv.sign_up(email, PASSWORD)
    resp = srv.post("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": email,
                                             "continueUrl": "https://evil.com\\@app.example.com/"})
    assert_error(resp, "UNAUTHORIZED_DOMAIN")


def test_send_accepts_only_urls_a_browser_reads_as_an_authorized_host(server):
    srv = server()
    email = unique_email("table")
    srv.sign_up(email, PASSWORD)
    accepted = refused = 0
    for row in ROWS:
        resp = srv.admin("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": email,
                                                   "returnOobLink": True, "continueUrl": row["input"]})
        assert resp.status_code in (200, 400), (row, resp.status_code, resp.text)
        if resp.status_code == 200:
            accepted += 1
            assert browser_goes_to_authorized(row), f"accepted {row['input']!r}, which Chromium reads as {row}"
        else:
            refused += 1
            assert resp.json()["error"]["message"].split(" ")[0] in (
                "INVALID_CONTINUE_URI", "UNAUTHORIZED_DOMAIN", "MISSING_CONTINUE_URI"), resp.text
    # The table is mostly attacks, but a fair share of it is legitimate and must keep working.
    assert accepted >= 100 and refused >= 300, (accepted, refused)


def test_page_redirects_only_to_the_browsers_reading_of_an_authorized_url(server):
    """A sign-in link's page redirects (GET, nothing consumed) to its continue URL: with the URL swapped
    for each row of the table, the Location is Chromium's href of an authorized URL, or there is none."""
    srv = server()
    link = srv.oob("EMAIL_SIGNIN", unique_email("tampered"), continueUrl="https://app.example.com/finish",
                   canHandleCodeInApp=True)["oobLink"]
    code = code_of(link)
    redirected = 0
    for row in ROWS:
        url = srv.action_page_url(mode="signIn", oobCode=code, apiKey=API_KEY, lang="en", continueUrl=row["input"])
        resp = requests.get(url, timeout=HTTP_TIMEOUT, allow_redirects=False)
        assert resp.status_code in (303, 400), (row, resp.status_code)
        if resp.status_code != 303:
            continue
        redirected += 1
        location = resp.headers["Location"]
        assert browser_goes_to_authorized(row), f"redirected for {row['input']!r} to {location!r}; Chromium: {row}"
        base, hash_sign, fragment = row["href"].partition("#")
        assert location.startswith(base), (location, row)
        assert urlsplit(location).hostname == row["hostname"], (location, row)
        assert location.endswith("#" + fragment) if hash_sign else "#" not in location, (location, row)
    assert redirected >= 100, redirected


def test_reset_page_checks_the_continue_url_again_after_the_new_password(server):
    """The probe's journey: reset form, new password posted, 303. A continue URL smuggled into the form
    (the page's own hidden field) is checked again at redirect time."""
    srv = server()
    email = unique_email("resetredirect")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("PASSWORD_RESET", email, continueUrl="https://app.example.com/done")["oobLink"]
    session = requests.Session()
    page = session.get(srv.local(link), timeout=HTTP_TIMEOUT)
    form = post_form(page.text)
    fields = {**hidden_fields(form), "newPassword": "a-new-password-2", "continueUrl": "https://evil.com\\@app.example.com/"}
    resp = session.post(srv.url + "/__/auth/action", data=fields, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert resp.status_code in (200, 303), resp.status_code
    assert "evil.com" not in resp.headers.get("Location", ""), resp.headers
    ok(srv.sign_in(email, "a-new-password-2"))

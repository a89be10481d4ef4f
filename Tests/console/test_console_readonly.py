"""The read-only console role on a server of its own with `server.consoleReadToken`: that token signs in to a session
that reads every page but whose changes are refused with 403 (signing out aside), it is no bearer credential of the
JSON API, and the admin token beside it still changes things."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from http_support import ADMIN_TOKEN, unique_email
from console_support import NAV_LINKS, SESSION_COOKIE, hidden_value, parse_html, post_forms, serve_console, show
from test_console_http import CONSOLE_PAGES, assert_error_page, bearer, suppression_rows

READ_TOKEN = "read-" + "0123456789abcdef" * 3


@pytest.fixture(scope="module")
def console_server(herald_bin, tmp_path_factory):
    yield from serve_console(herald_bin, tmp_path_factory, {"server": {"consoleReadToken": READ_TOKEN}})


@pytest.fixture(scope="module")
def reader(client):
    return client.sign_in(READ_TOKEN)


def test_the_read_token_signs_in_to_every_page_marked_read_only(client, reader, session, ledger):
    delivered = ledger.delivered("readerpage", 1)
    assert reader.cookie.split(".")[2] == "read", "a read-only session names its role in the cookie"
    for path in CONSOLE_PAGES + [f"/admin/messages/{delivered.ids[0]}", "/admin/console/suppressions/export"]:
        resp = client.get(path, reader)
        assert resp.status_code == 200, f"{path}\n{show(resp)}"
        if path.endswith("/export"):
            continue
        doc = parse_html(resp.text)
        assert doc.one("nav#nav span#read-only").text == "read-only", path
        assert {link: doc.one(f"a#{link}").get("href") for link in NAV_LINKS} == NAV_LINKS
    admin = parse_html(client.get("/admin/", session).text)
    assert admin.select_one("span#read-only") is None, "the admin's session is not marked read-only"
    # The cookie reads what the admin's reads beside the console (the audit export, a report).
    assert client.get("/admin/audit", reader, params={"email": delivered.email}).status_code == 200


def targets(ledger, srv, tag: str):
    """Something for every change button: a scheduled campaign of one, a refused message, a suppressed address."""
    email = unique_email(tag)
    assert bearer(srv, "POST", "/admin/suppressions", json={"emails": [email]}).status_code == 200
    return ledger.campaign(f"{tag}camp", 1), ledger.refused(f"{tag}msg"), email


def test_a_read_only_session_is_shown_no_change_forms(client, reader, session, ledger, console_server):
    campaign, refused, email = targets(ledger, console_server, "readerforms")
    pages = {
        "/admin/campaigns": f"/admin/campaigns/{campaign.id}/pause",
        f"/admin/messages/{refused.id}": f"/admin/messages/{refused.id}/retry",
        f"/admin/messages/{campaign.ids[0]}": f"/admin/messages/{campaign.ids[0]}/cancel",
        "/admin/console/suppressions": "/admin/console/suppressions/add",
        f"/admin/console/suppressions?email={email}": "/admin/console/suppressions/remove",
        "/admin/templates/reset-password/en": "/admin/templates/reset-password/en/test",
    }
    for path, action in pages.items():
        admin_actions = {form.get("action") for form in post_forms(parse_html(client.get(path, session).text))}
        assert action in admin_actions, f"the admin's {path} has no form posting to {action}: {admin_actions}"
    for path in list(pages) + CONSOLE_PAGES:
        resp = client.get(path, reader)
        assert resp.status_code == 200, show(resp)
        doc = parse_html(resp.text)
        actions = [form.get("action") for form in post_forms(doc)]
        assert actions == ["/admin/sign-out"], f"{path} offers a read-only session {actions}"


def test_a_read_only_session_changes_nothing_even_with_its_csrf(client, reader, session, ledger, console_server):
    campaign, refused, email = targets(ledger, console_server, "reader")
    attempts = {
        f"/admin/campaigns/{campaign.id}/pause": {},
        f"/admin/messages/{refused.id}/retry": {},
        f"/admin/messages/{campaign.ids[0]}/cancel": {},
        "/admin/console/suppressions/add": {"emails": unique_email("readeradd")},
        "/admin/console/suppressions/remove": {"email": email},
        "/admin/console/webhooks/replay": {"state": "any"},
        "/admin/templates/reset-password/en/test": {"email": unique_email("readertest")},
    }
    for path, fields in attempts.items():
        resp = client.post(path, {**fields, "csrf": reader.csrf}, reader)
        assert_error_page(resp, 403)
        assert "read-only" in parse_html(resp.text).one("p#error").text, path
    assert ledger.campaign_state(campaign.id) == "active" and ledger.state(campaign.ids[0]) == "queued"
    assert ledger.state(refused.id) == "failed"
    assert email in suppression_rows(console_server, [email]), "a read-only remove took the address off"
    assert suppression_rows(console_server, [attempts["/admin/console/suppressions/add"]["emails"]]) == {}
    assert console_server.mail_count(attempts["/admin/templates/reset-password/en/test"]["email"]) == 0

    # The admin's session on the same server does it.
    resp = client.post(f"/admin/campaigns/{campaign.id}/pause", {"csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == "/admin/campaigns", show(resp)
    assert ledger.campaign_state(campaign.id) == "paused"


def test_the_read_token_is_no_api_credential_and_a_reader_can_sign_out(client, console_server):
    assert bearer(console_server, "GET", "/admin/suppressions", token=READ_TOKEN).status_code == 401
    assert bearer(console_server, "POST", "/admin/messages:retry", token=READ_TOKEN,
                  json={"email": "a@x.test", "dryRun": True}).status_code == 401
    reader = client.sign_in(READ_TOKEN)
    forms = post_forms(parse_html(client.get("/admin/", reader).text))
    assert all(hidden_value(form, "csrf") == reader.csrf for form in forms)
    resp = client.post("/admin/sign-out", {"csrf": reader.csrf}, reader)
    assert urlsplit(client.location(resp)).path == "/admin/sign-in", show(resp)
    # A forged read-only cookie (an admin cookie relabelled) counts as none.
    admin = client.sign_in(ADMIN_TOKEN)
    expiry, nonce, mac = admin.cookie.split(".")
    forged = client.get("/admin/", cookies={SESSION_COOKIE: f"{expiry}.{nonce}.read.{mac}"})
    assert forged.status_code == 303 and urlsplit(client.location(forged)).path == "/admin/sign-in"

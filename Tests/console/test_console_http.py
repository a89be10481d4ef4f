"""The `/admin` console over plain HTTP (requests, no browser): sign-in and its cookies, CSRF, sessions,
the pages' contents against the ledger, the bearer-token admin API alongside, exports and headers."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import time
from urllib.parse import parse_qs, urlsplit

import requests

from helpers import query, wait_until
from http_support import ADMIN_TOKEN, HTTP_TIMEOUT, code_of, ok, unique_email
from campaign_support import AUDIT_FIELDS
from console_support import (
    ACTIONS, CSRF_COOKIE, LOCALES, NAV_LINKS, REFUSED_REPLY, SESSION_COOKIE, SESSION_MAX_AGE, csp_directives,
    hidden_value, is_html, parse_html, post_forms, set_cookies, show,
)

CONSOLE_PAGES = ["/admin/", "/admin/campaigns", "/admin/messages", "/admin/audit/search", "/admin/templates",
                 "/admin/templates/reset-password/en", "/admin/console/suppressions", "/admin/console/webhooks"]
SUPPRESSIONS = "/admin/console/suppressions"


def bearer(srv, method: str, path: str, token: str = ADMIN_TOKEN, **kwargs) -> requests.Response:
    return requests.request(method, srv.url + path, headers={"Authorization": f"Bearer {token}"},
                            timeout=HTTP_TIMEOUT, allow_redirects=False, **kwargs)


def assert_error_page(resp: requests.Response, status: int) -> None:
    assert resp.status_code == status, f"expected {status}\n{show(resp)}"
    assert is_html(resp), show(resp)
    error = parse_html(resp.text).select_one("p#error")
    assert error is not None and error.text, f"no p#error with a message\n{show(resp)}"


def assert_no_session_issued(resp: requests.Response) -> None:
    cookie = set_cookies(resp).get(SESSION_COOKIE)
    assert cookie is None or not cookie.value or cookie.attrs.get("max-age") == "0", \
        f"a refused sign-in issued a session cookie: {cookie.raw}"


def tampered(value: str, index: int) -> str:
    """`value` with one alphanumeric character at or after `index` replaced by another one."""
    for i in list(range(index, len(value))) + list(range(0, index)):
        if value[i].isalnum():
            replacement = "B" if value[i] == "A" else "A"
            return value[:i] + replacement + value[i + 1:]
    raise AssertionError(f"no alphanumeric character in the cookie value {value!r}")


def message_ids(doc) -> list:
    return [int(tr.id.split("-", 1)[1]) for tr in doc.select("tr") if tr.id and re.fullmatch(r"message-\d+", tr.id)]


# =========================================================================== sign-in
def test_sign_in_page_is_a_password_form_with_a_double_submit_csrf_cookie(client):
    """GET /admin/sign-in: the form, the password field, and a strict HttpOnly csrf cookie the hidden field is bound to
    (the field is a MAC of the cookie's random value, so neither can be made up; the refusals below show the binding)."""
    form = client.sign_in_form()
    assert form.form.get("method", "").lower() == "post" and form.form.get("action") == "/admin/sign-in", form.form
    token = form.form.one("input#token")
    assert token.get("name") == "token" and token.get("type", "").lower() == "password", token
    assert form.form.one("button#sign-in-button") is not None
    assert form.field, "no hidden csrf field in form#sign-in"
    assert form.cookie is not None, f"no {CSRF_COOKIE} cookie set\n{show(form.resp)}"
    assert form.cookie.value and form.cookie.value != form.field, "the hidden field must be derived, not a copy of the cookie"
    attrs = form.cookie.attrs
    assert attrs.get("httponly") is True, form.cookie.raw
    assert str(attrs.get("samesite", "")).lower() == "strict", form.cookie.raw
    assert attrs.get("path") == "/admin", form.cookie.raw
    assert SESSION_COOKIE not in set_cookies(form.resp), "the sign-in page must not issue a session"
    assert client.sign_in_form().field != form.field, "each sign-in page needs a fresh csrf token"


def test_signing_in_sets_a_strict_secure_http_only_session_cookie_for_eight_hours(client):
    """The right token and csrf: 303 to /admin/, and the session cookie with exactly the contract's flags."""
    session = client.sign_in()
    attrs = session.set_cookie.attrs
    assert attrs.get("path") == "/admin", session.set_cookie.raw
    assert attrs.get("max-age") == str(SESSION_MAX_AGE), session.set_cookie.raw
    assert attrs.get("httponly") is True and attrs.get("secure") is True, session.set_cookie.raw
    assert str(attrs.get("samesite", "")).lower() == "strict", session.set_cookie.raw
    overview = client.page("/admin/", session)
    assert overview.one("h1").text == "Overview"
    assert client.sign_in().cookie != session.cookie, "two sign-ins must get two sessions"


def test_a_wrong_token_is_refused_with_401_and_no_session(client):
    form = client.sign_in_form()
    resp = client.post("/admin/sign-in", {"token": ADMIN_TOKEN + "x", "csrf": form.field},
                       cookies={CSRF_COOKIE: form.cookie.value})
    assert_error_page(resp, 401)
    assert_no_session_issued(resp)


def test_sign_in_without_or_with_a_mismatched_csrf_is_forbidden(client):
    """The right token but no csrf field, no csrf cookie, or the two differing: 403 and no session."""
    form = client.sign_in_form()
    other = client.sign_in_form()
    cases = {
        "no csrf field": ({"token": ADMIN_TOKEN}, {CSRF_COOKIE: form.cookie.value}),
        "no csrf cookie": ({"token": ADMIN_TOKEN, "csrf": form.field}, {}),
        "field of another page": ({"token": ADMIN_TOKEN, "csrf": other.field}, {CSRF_COOKIE: form.cookie.value}),
        "made-up field": ({"token": ADMIN_TOKEN, "csrf": "x" * len(form.field)}, {CSRF_COOKIE: form.cookie.value}),
    }
    for name, (data, cookies) in cases.items():
        resp = client.post("/admin/sign-in", data, cookies=cookies)
        assert resp.status_code == 403, f"{name}: expected 403\n{show(resp)}"
        assert_error_page(resp, 403)
        assert_no_session_issued(resp)


# =========================================================================== sessions
def test_console_pages_redirect_to_sign_in_without_a_session(client, ledger):
    delivered = ledger.delivered("anon", 1)
    for path in CONSOLE_PAGES + [f"/admin/messages/{delivered.ids[0]}", "/admin/templates/reset-password/fa/html"]:
        resp = client.get(path)
        assert urlsplit(client.location(resp)).path == "/admin/sign-in", f"{path}\n{show(resp)}"
        assert delivered.email not in resp.text, f"{path} leaked data without a session"


def test_a_tampered_or_forged_session_cookie_counts_as_none(client, session):
    assert client.get("/admin/", session).status_code == 200, "control: the genuine cookie works"
    value = session.cookie
    forged = {
        "first character changed": tampered(value, 0),
        "middle character changed": tampered(value, len(value) // 2),
        "late character changed": tampered(value, max(0, len(value) - 2)),
        "truncated": value[:-4],
        "extended": value + "AAAA",
        "empty": "",
        "made up": "admin",
        "the admin token": ADMIN_TOKEN,
    }
    for name, cookie in forged.items():
        if cookie == value:
            continue
        resp = client.get("/admin/", cookies={SESSION_COOKIE: cookie})
        assert resp.status_code == 303 and urlsplit(client.location(resp)).path == "/admin/sign-in", \
            f"{name} ({cookie!r}) was accepted\n{show(resp)}"


def test_every_console_page_carries_the_nav_and_the_sessions_csrf_in_each_post_form(client, session, ledger):
    delivered = ledger.delivered("navcheck", 1)
    campaign = ledger.campaign("navcamp", 1)
    for path in CONSOLE_PAGES + [f"/admin/messages/{delivered.ids[0]}", f"/admin/messages/{campaign.ids[0]}"]:
        doc = client.page(path, session)
        nav = doc.one("nav#nav")
        for link_id, href in NAV_LINKS.items():
            assert nav.one(f"a#{link_id}").get("href") == href, f"{path}: a#{link_id}"
        sign_out = nav.select_one("form#sign-out") or doc.one("form#sign-out")
        assert sign_out.get("method", "").lower() == "post" and sign_out.get("action") == "/admin/sign-out", sign_out
        forms = post_forms(doc)
        assert forms, f"{path}: no POST form"
        for form in forms:
            assert hidden_value(form, "csrf") == session.csrf, f"{path}: {form} does not carry the session's csrf"
    assert client.sign_in().csrf != session.csrf, "each session needs a csrf token of its own"


def test_signing_out_needs_the_csrf_and_clears_the_cookie(client):
    session = client.sign_in()
    refused = client.post("/admin/sign-out", {}, session)
    assert_error_page(refused, 403)
    assert client.get("/admin/", session).status_code == 200, "a refused sign-out must leave the session alone"
    resp = client.post("/admin/sign-out", {"csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == "/admin/sign-in", show(resp)
    cleared = set_cookies(resp).get(SESSION_COOKIE)
    assert cleared is not None and cleared.attrs.get("max-age") == "0", f"sign-out did not clear the cookie\n{show(resp)}"
    assert cleared.attrs.get("path") == "/admin", cleared.raw


# =========================================================================== CSRF on actions
def test_campaign_actions_need_the_sessions_csrf_and_change_nothing_without_it(client, session, ledger):
    """pause without csrf, with a made-up one or another session's: 403 and still active; then pause,
    resume and cancel with it, each a 303 back to the list with a notice and the right buttons."""
    campaign = ledger.campaign("csrfcamp", 2)
    path = f"/admin/campaigns/{campaign.id}/pause"
    other = client.sign_in()
    for name, data in {"no csrf": {}, "made-up csrf": {"csrf": "0" * len(session.csrf)},
                       "another session's csrf": {"csrf": other.csrf}}.items():
        resp = client.post(path, data, session)
        assert resp.status_code == 403, f"{name}: expected 403\n{show(resp)}"
        assert_error_page(resp, 403)
        assert ledger.campaign_state(campaign.id) == "active", f"{name}: the campaign changed"
    assert client.get(f"/admin/campaigns/{campaign.id}/pause", session).status_code in (404, 405), \
        "a GET must never pause"
    assert ledger.campaign_state(campaign.id) == "active"

    row = f"tr#campaign-{campaign.id}"
    buttons = {"active": {"pause", "cancel"}, "paused": {"resume", "cancel"}, "cancelled": set()}
    # It starts in an hour: an active campaign whose start is ahead shows as scheduled, with its start.
    shown_state = {"active": "scheduled", "paused": "paused", "cancelled": "cancelled"}
    doc = client.page("/admin/campaigns", session)
    assert doc.one(f"{row} td.state").text == "scheduled"
    assert re.fullmatch(r"0/2 sent starts \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc.one(f"{row} td.progress").text), \
        doc.one(f"{row} td.progress").text
    assert doc.one(f"{row} a.report").get("href") == f"/admin/campaigns/{campaign.id}"
    refresh = [m for m in doc.select("meta") if m.get("http-equiv", "").lower() == "refresh"]
    assert len(refresh) == 1 and re.fullmatch(r"10; url=/admin/campaigns", refresh[0].get("content", "")), refresh
    for verb, state in (("pause", "paused"), ("resume", "active"), ("cancel", "cancelled")):
        tr = doc.one(row)
        shown = {b for b in ("pause", "resume", "cancel") if tr.select(f"button.{b}")}
        assert shown == buttons[ledger.campaign_state(campaign.id)], f"buttons {shown} for {tr}"
        form = next(f for f in tr.select("form") if f.select(f"button.{verb}"))
        assert form.get("action") == f"/admin/campaigns/{campaign.id}/{verb}" and form.get("method", "").lower() == "post"
        fields = {"csrf": hidden_value(form, "csrf")}
        if verb == "cancel":
            # A cancel cannot be undone: the row's button asks first, and changes nothing until confirmed.
            ask = client.post(form.get("action"), fields, session)
            assert ask.status_code == 200, show(ask)
            assert ledger.campaign_state(campaign.id) == "active", "asking changed the campaign"
            confirm = parse_html(ask.text).one("form#confirm-cancel")
            assert confirm.get("action") == form.get("action") and hidden_value(confirm, "confirm") == "yes"
            fields = {"csrf": hidden_value(confirm, "csrf"), "confirm": "yes"}
        resp = client.post(form.get("action"), fields, session)
        assert urlsplit(client.location(resp)).path == "/admin/campaigns", show(resp)
        assert ledger.campaign_state(campaign.id) == state, f"after {verb}"
        after = client.follow(resp, session)
        assert after.status_code == 200, show(after)
        doc = parse_html(after.text)
        assert doc.select_one("p#notice") is not None and doc.one("p#notice").text, f"no p#notice after {verb}"
        assert doc.one(f"{row} td.state").text == shown_state[state]
    assert not doc.one(row).select("button"), "a cancelled campaign offers no action"


def test_message_page_cancels_a_queued_row_and_retries_it_with_its_history(client, session, ledger):
    campaign = ledger.campaign("msgcamp", 1)
    outbox_id = campaign.ids[0]
    path = f"/admin/messages/{outbox_id}"
    doc = client.page(path, session)
    assert doc.one("dl#message") is not None and doc.select_one("form#retry") is None
    cancel = doc.one("form#cancel")
    assert cancel.get("action") == f"{path}/cancel" and cancel.get("method", "").lower() == "post"

    assert_error_page(client.post(f"{path}/cancel", {}, session), 403)
    assert ledger.state(outbox_id) == "queued", "a refused cancel changed the row"

    resp = client.post(f"{path}/cancel", {"csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == path, show(resp)
    assert ledger.state(outbox_id) == "cancelled"
    doc = parse_html(client.follow(resp, session).text)
    assert doc.select_one("p#notice") is not None and doc.one("p#notice").text
    assert doc.select_one("form#cancel") is None
    retry = doc.one("form#retry")
    assert retry.get("action") == f"{path}/retry" and retry.get("method", "").lower() == "post"

    resp = client.post(f"{path}/retry", {"csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == path, show(resp)
    assert ledger.state(outbox_id) != "cancelled", "retry left the row cancelled"
    doc = parse_html(client.follow(resp, session).text)
    assert doc.select_one("p#notice") is not None
    events = [tr.get("data-event") for tr in doc.select("table#history tr[data-event]")]
    assert events[:1] == ["queued"] and "cancelled" in events and "retried" in events, events
    assert events.index("cancelled") < events.index("retried"), f"history not in time order: {events}"


def test_message_pages_show_attempts_with_their_replies_and_only_the_forms_that_apply(client, session, ledger):
    delivered = ledger.delivered("history", 1)
    refused = ledger.refused("history")
    sent = client.page(f"/admin/messages/{delivered.ids[0]}", session)
    details = sent.one("dl#message").text
    assert str(delivered.ids[0]) in details and delivered.email in details and "sent" in details, details
    rows = sent.select("table#history tr[data-event]")
    assert [r.get("data-event") for r in rows][:2] == ["queued", "attempt"], rows
    attempt = next(r for r in rows if r.get("data-event") == "attempt")
    assert attempt.one("td.reply").text.startswith("250"), attempt.text
    assert sent.select_one("form#retry") is None and sent.select_one("form#cancel") is None

    failed = client.page(f"/admin/messages/{refused.id}", session)
    attempts = failed.select("table#history tr[data-event=attempt]")
    assert attempts and REFUSED_REPLY in attempts[-1].one("td.reply").text, [a.text for a in attempts]
    assert "No such user here" in attempts[-1].one("td.reply").text, "the reply text belongs in the history"
    assert failed.select_one("form#retry") is not None and failed.select_one("form#cancel") is None

    missing = client.get("/admin/messages/987654321", session)
    assert missing.status_code == 404 and is_html(missing), show(missing)


def test_message_search_filters_by_email_state_and_campaign_newest_first(client, session, ledger):
    delivered = ledger.delivered("search", 2)
    campaign = ledger.campaign("searchcamp", 2)
    form = client.page("/admin/messages", session).one("form#message-search")
    assert form.get("method", "get").lower() == "get"
    for selector in ("input[name=email]", "select[name=state]", "select[name=action]", "input[name=campaign]",
                     "button#search"):
        assert form.select_one(selector) is not None, f"form#message-search lacks {selector}"

    blank = {"email": "", "state": "", "action": "", "campaign": ""}
    doc = client.page("/admin/messages", session, params={**blank, "email": delivered.email})
    assert message_ids(doc) == sorted(delivered.ids, reverse=True), "newest first, only this address"
    for outbox_id in delivered.ids:
        tr = doc.one(f"tr#message-{outbox_id}")
        assert tr.one("td.state").text == "sent" and tr.one("td.recipient").text == delivered.email
        assert [a.get("href") for a in tr.select("a")].count(f"/admin/messages/{outbox_id}") >= 1

    assert message_ids(client.page("/admin/messages", session,
                                   params={**blank, "email": delivered.email, "state": "failed"})) == []
    assert message_ids(client.page("/admin/messages", session, params={**blank, "campaign": str(campaign.id)})) \
        == sorted(campaign.ids, reverse=True)
    action = next(o.get("value") for o in form.one("select[name=action]").select("option")
                  if o.get("value") in ("reset-password", "resetPassword"))
    assert message_ids(client.page("/admin/messages", session,
                                   params={**blank, "email": delivered.email, "action": action})) \
        == sorted(delivered.ids, reverse=True)


# =========================================================================== overview
def test_overview_counts_match_the_ledger(client, session, ledger):
    ledger.delivered("overview", 2)
    ledger.refused("overview")
    ledger.campaign("overviewcamp", 2)
    db = ledger.srv.db_path
    wait_until(lambda: not query(db, "SELECT 1 FROM outbox WHERE state IN ('sending', 'deferred')"), 30,
               "the worker to settle")
    expected = {r["state"]: r["n"] for r in query(db, "SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")}
    doc = client.page("/admin/", session)
    queue = {tr.get("data-state"): int(tr.one("td.count").text) for tr in doc.select("table#queue tr[data-state]")}
    assert queue == expected, f"queue table {queue} vs ledger {expected}"

    hour_ago = "(CAST(strftime('%s','now') AS INTEGER) - 3600) * 1000"
    sent = query(db, f"SELECT COUNT(*) AS n FROM delivery_attempts WHERE outcome = 'sent' AND finished_at >= {hour_ago}")[0]["n"]
    failed = query(db, "SELECT COUNT(*) AS n FROM delivery_attempts WHERE outcome IN ('failed', 'dead') "
                       f"AND finished_at >= {hour_ago}")[0]["n"]
    buckets = doc.select("table#send-rate tr")
    buckets = [tr for tr in buckets if tr.select("td")]
    assert 1 <= len(buckets) <= 13, f"{len(buckets)} five-minute rows for one hour"
    for tr in buckets:
        assert tr.one("td.time").text, tr
    assert sum(int(tr.one("td.sent").text) for tr in buckets) == sent
    assert sum(int(tr.one("td.failed").text) for tr in buckets) == failed
    assert sum(int(tr.one("td.deferred").text) for tr in buckets) == 0

    failures = {tr.get("data-class"): int(tr.one("td.count").text) for tr in doc.select("table#failures tr[data-class]")}
    fives = query(db, "SELECT COUNT(*) AS n FROM delivery_attempts WHERE reply_code BETWEEN 500 AND 599 "
                      f"AND finished_at >= {hour_ago}")[0]["n"]
    assert fives >= 1 and failures.get("5xx") == fives, f"failures {failures}, ledger has {fives} 5xx replies"
    assert "4xx" not in failures or failures["4xx"] == 0, failures

    # The embedded worker beats: it is listed alive, with this server's pid.
    workers = doc.select("table#workers tr[data-worker]")
    assert [tr.get("data-worker") for tr in workers] == ["alive"], workers
    assert workers[0].select("td")[1].text == str(ledger.srv.proc.pid)
    assert doc.select_one("p#error") is None, "no warning while a worker is alive"


# =========================================================================== admin API side by side

def chart_totals(doc, chart: str) -> dict:
    """{series: the legend's total} of a chart on a page."""
    return {li.get("class"): int(li.one("strong").text) for li in doc.select(f"figure#{chart} ul.legend li")}


def test_overview_charts_and_health_match_the_ledger(client, session, ledger):
    delivered = ledger.delivered("charts", 2)
    ledger.refused("charts")
    # A link clicked and redeemed: the verification page, then its code applied.
    srv = ledger.srv
    link = srv.oob("VERIFY_EMAIL", delivered.email)["oobLink"]
    parts = urlsplit(link)
    assert requests.get(f"{srv.url}{parts.path}?{parts.query}", timeout=HTTP_TIMEOUT).status_code == 200
    ok(srv.post("accounts:update", {"oobCode": code_of(link)}))
    db = srv.db_path
    hour_ago = "(CAST(strftime('%s','now') AS INTEGER) - 3600) * 1000"
    # A bounce and a complaint received now, against the delivered rows (as `herald bounces ingest` records them).
    with sqlite3.connect(db) as conn:
        for outbox_id, kind in zip(delivered.ids, ("hard", "complaint")):
            conn.execute("INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at) "
                         "VALUES (?, ?, ?, NULL, 'test', CAST(strftime('%s','now') AS INTEGER) * 1000)",
                         (outbox_id, delivered.email, kind))

    def ledger_count(sql: str) -> int:
        return query(db, sql.format(hour_ago=hour_ago))[0]["n"]

    doc = client.page("/admin/", session)
    sends = chart_totals(doc, "send-chart")
    assert sends["sent"] == ledger_count("SELECT COUNT(*) AS n FROM delivery_attempts WHERE outcome = 'sent' "
                                         "AND finished_at >= {hour_ago}") >= 2, sends
    assert sends["failed"] == ledger_count("SELECT COUNT(*) AS n FROM delivery_attempts WHERE outcome IN ('failed', 'dead') "
                                           "AND finished_at >= {hour_ago}") >= 1, sends
    assert sum(int(tr.one("td.sent").text) for tr in doc.select("table#send-rate tr") if tr.select("td")) == sends["sent"]
    bars = doc.select("figure#send-chart svg rect[data-series=sent] title")
    assert bars and sum(int(t.text.rsplit(": ", 1)[1]) for t in bars) == sends["sent"], "the bars add up to the legend"
    links = chart_totals(doc, "link-chart")
    assert links == {"click": ledger_count("SELECT COUNT(*) AS n FROM link_events WHERE kind = 'click' AND at >= {hour_ago}"),
                     "redeemed": ledger_count("SELECT COUNT(*) AS n FROM link_events WHERE kind = 'redeemed' "
                                              "AND at >= {hour_ago}")}, links
    assert links["click"] >= 1 and links["redeemed"] >= 1, links
    queue = chart_totals(doc, "queue-chart")
    assert queue == {r["state"]: r["n"] for r in query(db, "SELECT state, COUNT(*) AS n FROM outbox GROUP BY state")}, queue

    health = {tr.get("data-health"): tr.one("td") for tr in doc.select("table#health tr")}
    assert set(health) == {"relay", "webhooks", "bounces", "complaints"}, health
    assert health["relay"].text.startswith("ok: ") and "ok" in health["relay"].classes, health["relay"].text
    bounces = ledger_count("SELECT COUNT(*) AS n FROM mail_feedback WHERE kind IN ('hard', 'soft') "
                           "AND received_at >= {hour_ago}")
    expected = f"{100 * bounces / sends['sent']:.2f} % ({bounces} of {sends['sent']} sent)"
    assert health["bounces"].text == expected, (health["bounces"].text, expected)
    assert "warn" in health["complaints"].classes, "one complaint in a handful of sends is over 0.1 %"

    # The last 24 hours: an hour a bar, the same counts.
    day = client.page("/admin/", session, params={"window": "24h"})
    rows = [tr for tr in day.select("table#send-rate tr") if tr.select("td")]
    assert len(rows) == 24, len(rows)
    assert chart_totals(day, "send-chart")["sent"] >= sends["sent"]
    assert day.one("p#window strong").text == "Last 24 hours"

def test_the_session_cookie_cannot_call_the_json_post_apis(client, session, ledger):
    refused = ledger.refused("cookieapi")
    body = {"email": refused.email}
    for path in ("/admin/messages:retry", "/admin/messages:cancel"):
        resp = client.post(path, session=session, json=body)
        assert resp.status_code == 401, f"{path} with only a cookie\n{show(resp)}"
        resp = client.post(path, session=session, json=body, headers={"X-CSRF-Token": session.csrf})
        assert resp.status_code == 401, f"{path} with a cookie and a csrf header\n{show(resp)}"
    assert ledger.state(refused.id) == "failed", "a cookie-only retry requeued the row"
    resp = client.post("/admin/suppressions", session=session, json={"emails": [unique_email("cookiesupp")]})
    assert resp.status_code == 401, show(resp)
    # Reads too are limited to what the console links to (the report and the audit exports).
    for path in ("/admin/suppressions", f"/admin/suppressions/{unique_email('cookiesupp')}"):
        assert client.get(path, session).status_code == 401, f"{path} read with only a cookie"


def test_a_search_that_cannot_be_read_is_a_400_page_not_every_row(client, session, ledger):
    """`?email=a&email=b` does not decode: the page says so instead of listing the whole ledger."""
    for path in ("/admin/messages?email=a@example.com&email=b@example.com",
                 "/admin/audit/search?email=a@example.com&email=b@example.com"):
        resp = client.get(path, session)
        assert_error_page(resp, 400)
        doc = parse_html(resp.text)
        assert not doc.select("table#messages tr") and not doc.select("table#audit-rows tr"), path


def test_retrying_or_cancelling_a_message_that_does_not_exist_is_a_404_page(client, session):
    for verb in ("retry", "cancel"):
        assert_error_page(client.post(f"/admin/messages/987654321/{verb}", {"csrf": session.csrf}, session), 404)


def test_bearer_token_admin_api_keeps_working(console_server, ledger):
    srv = console_server
    delivered = ledger.delivered("bearer", 1)
    campaign = ledger.campaign("bearercamp", 1)
    audit = bearer(srv, "GET", "/admin/audit", params={"email": delivered.email})
    assert audit.status_code == 200 and audit.headers["Content-Type"].startswith("application/x-ndjson"), show(audit)
    assert sorted(int(json.loads(line)["id"]) for line in audit.text.splitlines() if line.strip()) == delivered.ids
    report = bearer(srv, "GET", f"/admin/campaigns/{campaign.id}")
    assert report.status_code == 200 and is_html(report), show(report)
    assert bearer(srv, "GET", "/admin/suppressions").status_code == 200
    retry = bearer(srv, "POST", "/admin/messages:retry", json={"email": delivered.email, "dryRun": True})
    assert retry.status_code == 200 and retry.json()["dryRun"] is True, show(retry)
    assert bearer(srv, "GET", "/admin/audit", token="wrong").status_code == 401
    assert requests.get(srv.url + "/admin/audit", timeout=HTTP_TIMEOUT, allow_redirects=False).status_code == 401, \
        "the JSON API without any credential stays a 401"


def test_the_session_cookie_authorizes_reading_the_audit_and_the_campaign_report(client, session, ledger):
    delivered = ledger.delivered("cookieread", 2)
    campaign = ledger.campaign("cookiecamp", 1)
    by_cookie = client.get("/admin/audit", session, params={"email": delivered.email})
    by_token = bearer(ledger.srv, "GET", "/admin/audit", params={"email": delivered.email})
    assert by_cookie.status_code == 200, show(by_cookie)
    assert by_cookie.headers["Content-Type"] == by_token.headers["Content-Type"]
    assert by_cookie.text == by_token.text and len(by_cookie.text.splitlines()) == 2
    report = client.get(f"/admin/campaigns/{campaign.id}", session)
    assert report.status_code == 200 and is_html(report), show(report)
    assert client.get(f"/admin/campaigns/{campaign.id}").status_code in (303, 401), "no cookie, no report"


# =========================================================================== audit
def test_audit_search_lists_the_links_and_exports_csv_and_jsonl_with_the_same_filters(client, session, ledger):
    delivered = ledger.delivered("auditcsv", 2)
    form = client.page("/admin/audit/search", session).one("form#audit")
    assert form.get("method", "get").lower() == "get"
    for name in ("email", "campaign", "action", "since", "until", "status"):
        assert form.select_one(f"[name={name}]") is not None, f"form#audit lacks {name}"
    assert form.select_one("button#audit-search") is not None

    params = {"email": delivered.email, "campaign": "", "action": "", "since": "", "until": "", "status": ""}
    doc = client.page("/admin/audit/search", session, params=params)
    rows = [tr for tr in doc.select("table#audit-rows tr") if tr.select("td")]
    assert len(rows) == 2 and all(delivered.email in tr.text for tr in rows), [tr.text for tr in rows]

    csv_href = doc.one("a#export-csv").get("href")
    parts = urlsplit(csv_href)
    assert parts.path == "/admin/audit" and parse_qs(parts.query).get("format") == ["csv"], csv_href
    assert parse_qs(parts.query).get("email") == [delivered.email], csv_href
    exported = client.get(csv_href, session)
    assert exported.status_code == 200, show(exported)
    assert exported.headers.get("Content-Type", "").startswith("text/csv"), show(exported)
    assert exported.headers.get("Content-Disposition", "").lower().startswith("attachment"), show(exported)
    reader = csv.DictReader(io.StringIO(exported.text, newline=""))
    assert reader.fieldnames == AUDIT_FIELDS, f"csv header {reader.fieldnames}"
    got = list(reader)
    assert sorted(int(r["id"]) for r in got) == delivered.ids and {r["recipient"] for r in got} == {delivered.email}

    jsonl_href = doc.one("a#export-jsonl").get("href")
    parts = urlsplit(jsonl_href)
    assert parts.path == "/admin/audit" and parse_qs(parts.query).get("email") == [delivered.email], jsonl_href
    lines = client.get(jsonl_href, session)
    assert lines.status_code == 200 and lines.headers["Content-Type"].startswith("application/x-ndjson"), show(lines)
    assert sorted(int(json.loads(line)["id"]) for line in lines.text.splitlines() if line.strip()) == delivered.ids


def test_a_bad_audit_filter_is_a_400_page(client, session):
    for params in ({"status": "sideways"}, {"since": "last tuesday"}, {"campaign": "seven"}):
        assert_error_page(client.get("/admin/audit/search", session, params=params), 400)


# =========================================================================== templates
def test_templates_list_every_action_and_locale_and_preview_them(client, session):
    doc = client.page("/admin/templates", session)
    listed = {(tr.get("data-action"), tr.get("data-locale")): tr for tr in doc.select("table#templates tr[data-action]")}
    for action in ACTIONS:
        for locale in LOCALES:
            tr = listed.get((action, locale))
            assert tr is not None, f"no row for {action}/{locale}"
            assert f"/admin/templates/{action}/{locale}" in [a.get("href") for a in tr.select("a")], tr
    page = client.page("/admin/templates/reset-password/en", session)
    assert page.one("#subject").text == "Reset your password for Herald Demo"
    assert page.one("iframe#preview").get("src") == "/admin/templates/reset-password/en/html"
    assert page.one("pre#text").text
    form = page.one("form#send-test")
    assert form.get("action") == "/admin/templates/reset-password/en/test" and form.get("method", "").lower() == "post"
    assert form.select_one("input[name=email]") is not None and form.select_one("button#send-test-button") is not None

    frame = client.get("/admin/templates/reset-password/fa/html", session)
    assert frame.status_code == 200 and is_html(frame), show(frame)
    root = parse_html(frame.text).one("html")
    assert (root.get("dir"), root.get("lang")) == ("rtl", "fa"), root


def _send_test(client, session, email: str):
    resp = client.post("/admin/templates/reset-password/en/test", {"email": email, "csrf": session.csrf}, session)
    if resp.status_code == 303:
        resp = client.follow(resp, session)
    return resp


def test_a_template_test_send_arrives_with_the_previewed_subject(client, session, console_server):
    email = unique_email("tmpltest")
    subject = client.page("/admin/templates/reset-password/en", session).one("#subject").text
    refused = client.post("/admin/templates/reset-password/en/test", {"email": email}, session)
    assert_error_page(refused, 403)
    assert console_server.mail_count(email) == 0, "a refused test send went out"

    resp = _send_test(client, session, email)
    assert resp.status_code == 200, show(resp)
    notice = parse_html(resp.text).select_one("p#notice")
    assert notice is not None and "250" in notice.text, f"no p#notice with the SMTP reply\n{show(resp)}"
    message = console_server.mail_to(email)[0]["message"]
    assert str(message["Subject"]) == subject


def test_a_template_test_send_to_a_suppressed_or_invalid_address_is_refused(client, session, console_server):
    suppressed = unique_email("tmplsupp")
    added = bearer(console_server, "POST", "/admin/suppressions", json={"emails": [suppressed], "reason": "manual"})
    assert added.status_code == 200, show(added)
    for email in (suppressed, "not-an-address"):
        resp = _send_test(client, session, email)
        doc = parse_html(resp.text)
        assert resp.status_code in (200, 400, 422) and is_html(resp), show(resp)
        assert doc.select_one("p#error") is not None and doc.one("p#error").text, f"{email}: no p#error\n{show(resp)}"
        assert doc.select_one("p#notice") is None, f"{email}: a notice beside the error"
    assert console_server.mail_count(suppressed) == 0, "mail went to a suppressed address"


# =========================================================================== headers
def test_pages_forbid_framing_and_caching_except_the_preview_frame_for_itself(client, session, ledger):
    delivered = ledger.delivered("headers", 1)
    refused_sign_in = client.post("/admin/sign-in", {"token": "nope"})
    pages = {path: client.get(path, session) for path in
             CONSOLE_PAGES + [f"/admin/messages/{delivered.ids[0]}", "/admin/messages/987654321"]}
    pages["/admin/sign-in"] = client.get("/admin/sign-in")
    pages["POST /admin/sign-in (refused)"] = refused_sign_in
    for name, resp in pages.items():
        assert is_html(resp), f"{name}\n{show(resp)}"
        csp = csp_directives(resp)
        assert csp.get("default-src") == ["'none'"], f"{name}: {resp.headers['Content-Security-Policy']}"
        assert csp.get("frame-ancestors") == ["'none'"], f"{name}: {resp.headers['Content-Security-Policy']}"
        assert "no-store" in resp.headers.get("Cache-Control", ""), f"{name}: Cache-Control {resp.headers.get('Cache-Control')}"
    frame = client.get("/admin/templates/reset-password/fa/html", session)
    csp = csp_directives(frame)
    assert csp.get("default-src") == ["'none'"], frame.headers["Content-Security-Policy"]
    assert csp.get("frame-ancestors") == ["'self'"], frame.headers["Content-Security-Policy"]
    assert "no-store" in frame.headers.get("Cache-Control", "")


# =========================================================================== suppressions
def suppression_rows(srv, emails) -> dict:
    """The ledger's suppressions of `emails`, by address."""
    marks = ",".join("?" * len(emails))
    return {r["email"]: r for r in query(srv.db_path, f"SELECT * FROM suppressions WHERE email IN ({marks})", tuple(emails))}


def test_suppressions_are_added_found_and_removed_from_the_console_with_the_csrf(client, session, console_server):
    """The add form takes addresses one a line with a reason, scope and note as `herald suppressions add` does; the
    list and the bearer API agree; remove takes one off. Without the csrf both are refused with 403 and change nothing."""
    srv = console_server
    emails = [unique_email("consupp1"), unique_email("consupp2")]
    doc = client.page(SUPPRESSIONS, session)
    add = doc.one("form#suppression-add")
    assert add.get("method", "").lower() == "post" and add.get("action") == f"{SUPPRESSIONS}/add"
    assert hidden_value(add, "csrf") == session.csrf
    for selector in ("textarea[name=emails]", "select[name=reason]", "select[name=scope]", "input[name=detail]"):
        assert add.select_one(selector) is not None, f"form#suppression-add lacks {selector}"
    fields = {"emails": "\n".join(emails), "reason": "complaint", "scope": "campaigns", "detail": "asked by phone"}

    for name, data in {"no csrf": fields, "made-up csrf": {**fields, "csrf": "0" * len(session.csrf)}}.items():
        assert_error_page(client.post(f"{SUPPRESSIONS}/add", data, session), 403)
        assert suppression_rows(srv, emails) == {}, f"{name}: a refused add suppressed"

    resp = client.post(f"{SUPPRESSIONS}/add", {**fields, "csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == SUPPRESSIONS, show(resp)
    rows = suppression_rows(srv, emails)
    assert {e: (r["reason"], r["scope"], r["detail"]) for e, r in rows.items()} == \
        {e: ("complaint", "campaigns", "asked by phone") for e in emails}, rows
    after = parse_html(client.follow(resp, session).text)
    assert "Suppressed 2" in after.one("p#notice").text, after.one("p#notice").text
    api = bearer(srv, "GET", f"/admin/suppressions/{emails[0]}")
    assert api.status_code == 200 and api.json()["reason"] == "complaint" and api.json()["scope"] == "campaigns", show(api)

    found = client.page(SUPPRESSIONS, session, params={"email": emails[0].upper(), "reason": ""})
    tr = found.one("table#suppressions tr[data-email]")
    assert tr.get("data-email") == emails[0] and tr.one("td.reason").text == "complaint" \
        and tr.one("td.scope").text == "campaigns" and tr.one("td.detail").text == "asked by phone", tr.text
    assert len(found.select("table#suppressions tr[data-email]")) == 1
    remove = tr.one("form")
    assert remove.get("action") == f"{SUPPRESSIONS}/remove" and remove.get("method", "").lower() == "post"
    assert hidden_value(remove, "email") == emails[0] and hidden_value(remove, "csrf") == session.csrf

    assert_error_page(client.post(f"{SUPPRESSIONS}/remove", {"email": emails[0]}, session), 403)
    assert emails[0] in suppression_rows(srv, emails), "a refused remove took the address off"
    resp = client.post(f"{SUPPRESSIONS}/remove", {"email": emails[0], "csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == SUPPRESSIONS, show(resp)
    assert set(suppression_rows(srv, emails)) == {emails[1]}
    assert parse_html(client.follow(resp, session).text).one("p#notice").text.startswith("Removed")
    assert bearer(srv, "GET", f"/admin/suppressions/{emails[0]}").status_code == 404
    gone = client.page(SUPPRESSIONS, session, params={"email": emails[0]})
    assert not gone.select("table#suppressions tr[data-email]") and gone.one("p#suppressions-empty").text
    again = client.post(f"{SUPPRESSIONS}/remove", {"email": emails[0], "csrf": session.csrf}, session)
    assert "not on the list" in parse_html(client.follow(again, session).text).one("p#notice").text
    assert client.get(f"{SUPPRESSIONS}/add", session).status_code in (404, 405), "a GET must never add"


def test_a_bad_address_or_reason_is_refused_as_a_page_and_adds_nothing(client, session, console_server):
    good = unique_email("consuppgood")
    for name, data in {"bad address": {"emails": f"{good}\nnot-an-address"},
                       "bad reason": {"emails": good, "reason": "bored"},
                       "bad scope": {"emails": good, "scope": "some"},
                       "no address": {"emails": "  "}}.items():
        resp = client.post(f"{SUPPRESSIONS}/add", {**data, "csrf": session.csrf}, session)
        assert resp.status_code == 400, f"{name}\n{show(resp)}"
        assert_error_page(resp, 400)
        assert suppression_rows(console_server, [good]) == {}, f"{name}: something was added"
    assert_error_page(client.get(SUPPRESSIONS, session, params={"reason": "bored"}), 400)
    assert_error_page(client.get(f"{SUPPRESSIONS}?email=a@x.test&email=b@x.test", session), 400)


def test_the_suppression_list_pages_newest_first_and_exports_csv(client, session, console_server):
    """More than a page: following `Next page` from the first visits every address once, newest first (ties in
    time by address, descending) as the ledger orders them; the reason filter narrows both the list and the export;
    the CSV is `herald suppressions export`'s form, a download."""
    srv = console_server
    tag = f"conpage{time.monotonic_ns()}"
    emails = sorted(f"{tag}-{i:03d}@x.test" for i in range(105))
    added = bearer(srv, "POST", "/admin/suppressions", json={"emails": emails, "reason": "manual"})
    assert added.status_code == 200, show(added)
    time.sleep(0.01)
    hard = unique_email("conpagehard")
    assert bearer(srv, "POST", "/admin/suppressions", json={"emails": [hard], "reason": "hard-bounce"}).status_code == 200
    expected = [r["email"] for r in query(srv.db_path, "SELECT email FROM suppressions ORDER BY created_at DESC, email DESC")]
    assert expected[0] == hard, "the newest entry leads"

    seen, path, pages = [], SUPPRESSIONS, 0
    while path:
        doc = client.page(path, session)
        rows = [tr.get("data-email") for tr in doc.select("table#suppressions tr[data-email]")]
        assert len(rows) <= 100, f"{len(rows)} rows on one page"
        seen += rows
        pages += 1
        link = doc.select_one("a#next-page")
        path = link.get("href") if link is not None else None
        assert pages < 50, "paging does not end"
    assert pages >= 2 and seen == expected, f"{pages} pages; {len(seen)} seen vs {len(expected)} in the ledger"
    for bad in ("x", "12", ",a@x.test", "-5,a@x.test"):
        assert_error_page(client.get(SUPPRESSIONS, session, params={"after": bad}), 400)

    doc = client.page(SUPPRESSIONS, session, params={"reason": "hard-bounce"})
    rows = [tr.get("data-email") for tr in doc.select("table#suppressions tr[data-email]")]
    assert hard in rows and not set(rows) & set(emails), rows
    export = doc.one("a#export-csv").get("href")
    assert urlsplit(export).path == f"{SUPPRESSIONS}/export" and "reason=hard-bounce" in export, export

    resp = client.get(f"{SUPPRESSIONS}/export", session)
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("text/csv"), show(resp)
    assert resp.headers.get("Content-Disposition", "").lower().startswith("attachment"), resp.headers
    reader = csv.DictReader(io.StringIO(resp.text, newline=""))
    assert reader.fieldnames == ["email", "reason", "scope", "detail", "created_at"], reader.fieldnames
    exported = [r["email"] for r in reader]
    assert sorted(exported) == sorted(expected) and exported == sorted(exported), "the export stays in address order"
    by_reason = client.get(export, session)
    assert by_reason.status_code == 200, show(by_reason)
    assert hard in by_reason.text and emails[0] not in by_reason.text
    assert urlsplit(client.location(client.get(f"{SUPPRESSIONS}/export"))).path == "/admin/sign-in", \
        "the export needs a session"


def test_the_json_suppressions_api_is_unchanged_beside_the_console_page(client, session, console_server):
    """`/admin/suppressions` stays the bearer-token JSON API (the cookie gets its 401); the page lives at
    /admin/console/suppressions."""
    assert client.get("/admin/suppressions", session).status_code == 401
    api = bearer(console_server, "GET", "/admin/suppressions", params={"limit": 1})
    assert api.status_code == 200 and api.headers["Content-Type"].startswith("application/json"), show(api)
    assert "suppressions" in api.json()
    assert client.page(SUPPRESSIONS, session).one("h1").text == "Suppressions"

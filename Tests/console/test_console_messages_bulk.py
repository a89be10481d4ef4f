"""The console's messages page doing the work: keyset paging (Older / Newer links) through more than two pages, the
queue-time filters (ISO 8601 and how long ago, as `herald messages` takes them), and bulk retry / cancel of ticked
rows or of the whole search, each behind a page naming the count. On a server of its own with a read-only token:
the bulk form is refused 403 without the session's csrf and for the read-only session, and changes nothing then.
In Chromium: a bulk cancel by clicking, and the pages at 1,400 and 390 px without sideways scrolling."""

from __future__ import annotations

import math
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.by import By

from helpers import query
from campaign_support import iso_seconds
from console_support import parse_html, show
from test_console_browser import WIDTHS, assert_fits, console, css, overflow, path_of, set_width, shot, wait  # noqa: F401
from test_console_http import assert_error_page, message_ids
# The server with a read-only token, and its reader's session.
from test_console_readonly import console_server, reader  # noqa: F401

PAGE = 50  # rows a page (ConsoleController.messagePageSize)
BULK = "/admin/console/messages/bulk"


def fields(form) -> list:
    """A form's hidden inputs as (name, value) pairs, repeated names kept (`ids[]`)."""
    return [(i.get("name"), i.get("value", "")) for i in form.select("input") if i.get("type", "").lower() == "hidden"]


def bulk_form(client, session, params: dict):
    doc = client.page("/admin/messages", session, params=params)
    return doc, doc.one("form#bulk")


def post_bulk(client, session, form, op: str, ticked: list = ()) -> object:
    """The bulk form posted by one of its buttons, with `ticked` ids' boxes ticked."""
    return client.post(BULK, fields(form) + [("op", op)] + [("ids[]", str(i)) for i in ticked], session)


@pytest.fixture
def db(console_server):
    """A query of the server's SQLite ledger: db(sql, args) -> rows."""
    return lambda sql, args=(): query(console_server.db_path, sql, args)


def events(db, outbox_ids: list, kind: str) -> list:
    marks = ",".join("?" * len(outbox_ids))
    return db(f"SELECT outbox_id FROM outbox_events WHERE kind = ? AND outbox_id IN ({marks})", (kind, *outbox_ids))


def states(db, ids: list) -> dict:
    rows = db(f"SELECT id, state FROM outbox WHERE id IN ({','.join('?' * len(ids))})", tuple(ids))
    return {r["id"]: r["state"] for r in rows}


# =========================================================================== paging and filters
def test_paging_through_more_than_two_pages_lists_every_row_once_both_ways(client, session, ledger):
    campaign = ledger.campaign("paging", 2 * PAGE + 7)
    expected = sorted(campaign.ids, reverse=True)
    doc = client.page("/admin/messages", session, params={"campaign": str(campaign.id)})
    assert doc.select_one("a#newer-page") is None, "the first page has nothing newer"
    pages = [message_ids(doc)]
    while (older := doc.select_one("a#older-page")) is not None:
        href = older.get("href")
        assert parse_qs(urlsplit(href).query)["campaign"] == [str(campaign.id)], f"the link drops the filter: {href}"
        doc = client.page(href, session)
        pages.append(message_ids(doc))
        assert len(pages) < 10, "the Older links never end"
    assert [len(p) for p in pages] == [PAGE, PAGE, 7], [len(p) for p in pages]
    listed = [i for page in pages for i in page]
    assert listed == expected, "pages repeat or skip rows"
    # Back up through the Newer links: the same pages, in reverse.
    back = [message_ids(doc)]
    while (newer := doc.select_one("a#newer-page")) is not None:
        doc = client.page(newer.get("href"), session)
        back.append(message_ids(doc))
        assert len(back) < 10, "the Newer links never end"
    assert back == list(reversed(pages))
    assert doc.select_one("a#older-page") is not None


def test_queue_time_filters_take_iso_times_and_how_long_ago(client, session, ledger, db):
    first = ledger.campaign("timefirst", 2)
    time.sleep(1.5)
    second = ledger.campaign("timesecond", 2)
    queued = {r["id"]: r["queued_at"] for r in db(
        "SELECT id, queued_at FROM outbox WHERE campaign_id IN (?, ?)", (first.id, second.id))}
    boundary = math.ceil(max(queued[i] for i in first.ids) / 1000)
    assert boundary * 1000 <= min(queued[i] for i in second.ids), f"the campaigns were queued in the same second: {queued}"
    mid = iso_seconds(boundary)

    later = set(message_ids(client.page("/admin/messages", session, params={"since": mid, "action": "verify-email"})))
    assert set(second.ids) <= later and not set(first.ids) & later, (mid, sorted(later))
    earlier = set(message_ids(client.page("/admin/messages", session, params={"until": mid, "action": "verify-email"})))
    assert set(first.ids) <= earlier and not set(second.ids) & earlier, (mid, sorted(earlier))
    recent = set(message_ids(client.page("/admin/messages", session, params={"since": "1h", "until": "now"})))
    assert set(first.ids + second.ids) <= recent
    assert not message_ids(client.page("/admin/messages", session, params={"until": "2d"})), "nothing is two days old"
    # The resolved times ride along the page links, so later pages cover the same window.
    doc = client.page("/admin/messages", session, params={"since": "1h"})
    assert doc.one("form#bulk").select("input[name=since]")[0].get("value").endswith("Z")

    for bad in ({"since": "yesterday"}, {"until": "+1h"}, {"since": "2026-13-45T00:00:00Z"}, {"older": "x"}):
        resp = client.get("/admin/messages", session, params=bad)
        assert_error_page(resp, 400)
        assert not message_ids(parse_html(resp.text)), bad


# =========================================================================== bulk changes
def test_bulk_cancel_of_the_whole_search_names_the_count_then_changes_exactly_those(client, session, ledger, db):
    campaign = ledger.campaign("bulkall", 7)
    doc, form = bulk_form(client, session, {"campaign": str(campaign.id)})
    assert len(message_ids(doc)) == 7

    resp = post_bulk(client, session, form, "cancel-search")
    assert resp.status_code == 200, show(resp)
    page = parse_html(resp.text)
    assert page.one("h1").text == "Cancel 7 messages?"
    assert set(states(db, campaign.ids).values()) == {"queued"}, "the question changed something"

    confirm = page.one("form#confirm-bulk")
    assert confirm.get("action") == BULK
    resp = client.post(BULK, fields(confirm), session)
    target = client.location(resp)
    assert parse_qs(urlsplit(target).query)["count"] == ["7"], target
    assert set(states(db, campaign.ids).values()) == {"cancelled"}
    assert len(events(db, campaign.ids, "cancelled")) == 7, "each change recorded once in outbox_events"
    done = parse_html(client.follow(resp, session).text)
    assert done.one("p#notice").text == "Cancelled 7 message(s)."
    assert sorted(message_ids(done), reverse=True) == message_ids(done) and set(message_ids(done)) == set(campaign.ids)

    # Again: nothing left to cancel, and the page says so.
    again = post_bulk(client, session, form, "cancel-search")
    assert again.status_code == 200 and parse_html(again.text).select_one("p#bulk-none") is not None, show(again)


def test_bulk_retry_of_ticked_rows_takes_only_those_a_retry_applies_to(client, session, ledger, db):
    refused = [ledger.refused("bulkretry") for _ in range(2)]
    delivered = ledger.delivered("bulkretrysent", 1)
    failed_ids = [r.id for r in refused]
    _, form = bulk_form(client, session, {"action": "reset-password"})
    resp = post_bulk(client, session, form, "retry-selected", failed_ids + delivered.ids)
    assert resp.status_code == 200, show(resp)
    page = parse_html(resp.text)
    assert page.one("h1").text == "Retry 2 messages?", "the sent row is no retry's"
    confirm = page.one("form#confirm-bulk")
    assert sorted(int(v) for n, v in fields(confirm) if n == "ids[]") == sorted(failed_ids)
    assert not events(db, failed_ids, "retried")

    resp = client.post(BULK, fields(confirm), session)
    assert parse_qs(urlsplit(client.location(resp)).query)["count"] == ["2"]
    assert sorted(r["outbox_id"] for r in events(db, failed_ids, "retried")) == sorted(failed_ids)
    assert not events(db, delivered.ids, "retried") and states(db, delivered.ids) == {delivered.ids[0]: "sent"}


def test_bulk_forms_need_the_csrf_and_an_admin_session(client, session, reader, ledger, db):
    campaign = ledger.campaign("bulkguard", 2)
    _, form = bulk_form(client, session, {"campaign": str(campaign.id)})
    posted = [(n, v) for n, v in fields(form) if n != "csrf"] + [("op", "cancel-search"), ("confirm", "yes")]
    assert_error_page(client.post(BULK, posted, session), 403)
    assert_error_page(client.post(BULK, posted + [("csrf", "x" * 43)], session), 403)
    assert_error_page(client.post(BULK, posted + [("csrf", reader.csrf)], reader), 403)
    picked = [("op", "cancel-selected"), ("confirm", "yes"), ("csrf", reader.csrf), ("ids[]", str(campaign.ids[0]))]
    assert_error_page(client.post(BULK, picked, reader), 403)
    assert set(states(db, campaign.ids).values()) == {"queued"}, "a refused bulk form changed rows"
    # The reader sees the page, with its rows.
    assert set(message_ids(client.page("/admin/messages", reader, params={"campaign": str(campaign.id)}))) == set(campaign.ids)


def test_bad_bulk_forms_are_400_pages_that_change_nothing(client, session, ledger, db):
    campaign = ledger.campaign("bulkbad", 2)
    _, form = bulk_form(client, session, {"campaign": str(campaign.id)})
    base = [(n, v) for n, v in fields(form) if n not in ("state",)]
    cases = {
        "no button": base,
        "unknown button": base + [("op", "delete-everything")],
        "nothing ticked": base + [("op", "cancel-selected")],
        "not an id": base + [("op", "cancel-selected"), ("ids[]", "abc")],
        "a state a cancel cannot take": base + [("op", "cancel-search"), ("state", "sent")],
        "a time in the future": [(n, v) for n, v in base if n != "since"] + [("op", "cancel-search"), ("since", "+1h")],
    }
    for name, data in cases.items():
        resp = client.post(BULK, data + [("confirm", "yes")], session)
        assert resp.status_code == 400, f"{name}\n{show(resp)}"
        assert_error_page(resp, 400)
    assert set(states(db, campaign.ids).values()) == {"queued"}


# =========================================================================== in the browser
def test_a_bulk_cancel_by_clicking_asks_first_and_then_cancels(console, console_server, ledger, db, tmp_path):
    campaign = ledger.campaign("bulkclick", 3)
    console.get(f"{console_server.url}/admin/messages?campaign={campaign.id}")
    css(console, "form#bulk")
    for outbox_id in campaign.ids[:2]:
        console.find_element(By.CSS_SELECTOR, f"tr#message-{outbox_id} input[type=checkbox]").click()
    console.find_element(By.CSS_SELECTOR, "button#cancel-selected").click()
    heading = wait(console, lambda d: d.find_element(By.CSS_SELECTOR, "form#confirm-bulk") and d.find_element(By.TAG_NAME, "h1"),
                   "the confirmation page")
    assert heading.text == "Cancel 2 messages?"
    assert set(states(db, campaign.ids).values()) == {"queued"}
    console.find_element(By.CSS_SELECTOR, "form#confirm-bulk button[type=submit]").click()
    notice = css(console, "p#notice", "the notice after cancelling")
    assert notice.text == "Cancelled 2 message(s)." and path_of(console) == "/admin/messages"
    assert states(db, campaign.ids) == {campaign.ids[0]: "cancelled", campaign.ids[1]: "cancelled", campaign.ids[2]: "queued"}


@pytest.mark.parametrize("width", WIDTHS)
def test_the_paged_messages_and_the_confirmation_fit_the_width(console, console_server, client, session, ledger, tmp_path,
                                                               width):
    campaign = ledger.campaign("bulkwidth-with-a-rather-long-name", PAGE + 1)
    _, form = bulk_form(client, session, {"campaign": str(campaign.id)})
    newest = max(campaign.ids)
    pages = [f"/admin/messages?campaign={campaign.id}", f"/admin/messages?campaign={campaign.id}&older={newest}",
             "/admin/messages?since=1h&until=now"]
    set_width(console, width)
    try:
        for index, path in enumerate(pages):
            assert_fits(console, console_server.url + path, width, ready="form#bulk")
            assert console.find_element(By.ID, "cancel-search").is_displayed()
            shot(console, tmp_path, f"messages-{width}-{index}")
        # The confirmation page, reached by the button.
        console.get(f"{console_server.url}/admin/messages?campaign={campaign.id}")
        console.find_element(By.CSS_SELECTOR, "button#retry-search").click()
        css(console, "p#bulk-none, form#confirm-bulk", "the answer to the bulk button")
        got = overflow(console)
        assert got["scroll"] <= got["inner"], f"the bulk answer at {width} px: {got}"
    finally:
        console.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

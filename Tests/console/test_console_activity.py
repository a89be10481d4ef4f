"""The console's action log on a server of its own (with `server.consoleReadToken`): every change made in `/admin`
lands in the ledger's `console_actions` with the session's actor, shows on `/admin/console/activity` newest first a
page at a time, and `herald console activity` lists it in every format."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest

from helpers import query
from http_support import unique_email
from console_support import parse_html, serve_console, show
from test_console_http import assert_error_page, bearer

READ_TOKEN = "read-" + "fedcba9876543210" * 3
ACTIVITY = "/admin/console/activity"


@pytest.fixture(scope="module")
def console_server(herald_bin, tmp_path_factory):
    yield from serve_console(herald_bin, tmp_path_factory, {"server": {"consoleReadToken": READ_TOKEN}})


def actor(session) -> str:
    """The log's actor of a session: its role and the start of its nonce (the cookie's middle part)."""
    role = "read-only" if session.cookie.split(".")[2] == "read" else "admin"
    return f"{role}:{session.cookie.split('.')[1][:8]}"


def logged(srv, after: int = 0) -> list:
    """The ledger's console actions after id `after`, oldest first."""
    return query(srv.db_path, "SELECT * FROM console_actions WHERE id > ? ORDER BY id", (after,))


def last_id(srv) -> int:
    rows = query(srv.db_path, "SELECT COALESCE(MAX(id), 0) AS id FROM console_actions")
    return rows[0]["id"]


def test_every_console_change_is_logged_with_its_actor(client, session, ledger, console_server):
    srv = console_server
    start = last_id(srv)
    campaign, other = ledger.campaign("actcamp", 1), ledger.campaign("actother", 1)
    refused = ledger.refused("actmsg")
    address, tester = unique_email("actsupp"), unique_email("acttest")
    steps = [
        (f"/admin/campaigns/{campaign.id}/pause", {}, ("campaign paused", f"campaign {campaign.id}", "ok")),
        (f"/admin/campaigns/{campaign.id}/resume", {}, ("campaign resumed", f"campaign {campaign.id}", "ok")),
        (f"/admin/campaigns/{campaign.id}/cancel", {"confirm": "yes"}, ("campaign cancelled", f"campaign {campaign.id}", "ok")),
        (f"/admin/messages/{refused.id}/retry", {}, ("message retried", f"message {refused.id}", "ok")),
        (f"/admin/messages/{other.ids[0]}/cancel", {}, ("message cancelled", f"message {other.ids[0]}", "ok")),
        ("/admin/console/suppressions/add", {"emails": address}, ("suppressed", address, "ok")),
        ("/admin/console/suppressions/remove", {"email": address}, ("unsuppressed", address, "ok")),
        ("/admin/console/webhooks/replay", {"state": "any"}, ("webhook deliveries replayed", "every endpoint", "ok")),
        ("/admin/templates/reset-password/en/test", {"email": tester}, ("template test sent", "reset-password/en", "ok")),
        ("/admin/console/suppressions/add", {"emails": "not-an-address"}, ("suppressions/add", None, "failed")),
    ]
    for path, fields, _ in steps:
        resp = client.post(path, {**fields, "csrf": session.csrf}, session)
        assert resp.status_code in (200, 303, 400), show(resp)
    srv.mail_to(tester)
    rows = logged(srv, start)
    assert [(r["action"], r["target"], r["result"]) for r in rows] == [want for _, _, want in steps], rows
    assert {r["actor"] for r in rows} == {actor(session)}
    assert rows[-1]["detail"] == "answered 400"
    assert "added=1" in rows[5]["detail"] and "outcome=sent" in rows[8]["detail"]
    assert all(session.csrf not in (r["detail"] or "") and "Bearer" not in (r["detail"] or "") for r in rows)

    # The page lists them newest first, with the same fields.
    doc = client.page(ACTIVITY, session)
    shown = [(tr.one("td.action").text, tr.one("td.target").text, tr.one("td.result").text, tr.one("td.actor").text)
             for tr in doc.select("table#activity tr[data-result]")]
    expected = [(r["action"], r["target"] or "", r["result"], r["actor"]) for r in reversed(logged(srv))]
    assert shown == expected[:len(shown)] and len(shown) == min(50, len(expected)), shown


def test_a_refused_or_forged_post_is_logged_only_when_a_session_made_it(client, session, console_server):
    srv = console_server
    start = last_id(srv)
    reader = client.sign_in(READ_TOKEN)
    email = unique_email("actreader")
    assert_error_page(client.post("/admin/console/suppressions/add", {"emails": email, "csrf": reader.csrf}, reader), 403)
    assert_error_page(client.post("/admin/console/suppressions/add", {"emails": email}, session), 403)
    rows = logged(srv, start)
    assert [(r["actor"], r["action"], r["result"], r["detail"]) for r in rows] == [
        (actor(reader), "suppressions/add", "refused", "read-only session")], rows
    # The read-only session reads the log (and has nothing to change on it).
    doc = client.page(ACTIVITY, reader)
    assert doc.select("table#activity tr[data-result]")[0].one("td.actor").text == actor(reader)
    assert [f.get("action") for f in doc.select("form") if f.get("method", "").lower() == "post"] == ["/admin/sign-out"]


def test_the_activity_page_pages_newest_first_and_refuses_a_bad_cursor(client, session, console_server):
    srv = console_server
    for i in range(55):
        resp = client.post("/admin/console/webhooks/replay", {"state": "any", "csrf": session.csrf}, session)
        assert resp.status_code == 303, show(resp)
    ids = [r["id"] for r in reversed(logged(srv))]
    first = client.page(ACTIVITY, session)
    page_ids = [int(tr.get("id").removeprefix("action-")) for tr in first.select("table#activity tr[data-result]")]
    assert page_ids == ids[:50]
    older = first.one("a#older").get("href")
    assert older == f"{ACTIVITY}?before={ids[49]}"
    second = client.page(older, session)
    second_ids = [int(tr.get("id").removeprefix("action-")) for tr in second.select("table#activity tr[data-result]")]
    assert second_ids == ids[50:100]
    assert second.one("a#newest").get("href") == ACTIVITY
    for bad in ("x", "-1", "0"):
        assert_error_page(client.get(ACTIVITY, session, params={"before": bad}), 400)
    assert client.get(ACTIVITY).status_code == 303, "the log needs a session"
    assert bearer(srv, "GET", ACTIVITY).status_code == 303, "the bearer token is no console session"


def test_the_cli_lists_the_log_in_every_format(console_cli, client, session, console_server):
    srv = console_server
    address = unique_email("actcli")
    resp = client.post("/admin/console/suppressions/add", {"emails": address, "csrf": session.csrf}, session)
    assert resp.status_code == 303, show(resp)
    newest = logged(srv)[-1]
    assert newest["target"] == address

    out = console_cli("console", "activity", "--format", "json", "--limit", "3", config=srv.config).stdout
    rows = json.loads(out)
    assert len(rows) == 3 and rows[0]["id"] == newest["id"] and rows[0]["target"] == address
    assert rows[0]["actor"] == actor(session) and rows[0]["result"] == "ok" and rows[0]["action"] == "suppressed"
    assert [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True)
    assert set(rows[0]) == {"id", "at", "actor", "action", "target", "detail", "result"}

    lines = console_cli("console", "activity", "--format", "jsonl", "--limit", "2", config=srv.config).stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [r["id"] for r in rows[:2]]

    table = list(csv.DictReader(io.StringIO(
        console_cli("console", "activity", "--format", "csv", "--limit", "1", config=srv.config).stdout)))
    assert list(table[0]) == ["id", "at", "actor", "action", "target", "result", "detail"]
    assert table[0]["target"] == address and table[0]["id"] == str(newest["id"])

    text = console_cli("console", "activity", "--limit", "1", config=srv.config).stdout.splitlines()
    assert text[0].split() == ["ID", "AT", "ACTOR", "ACTION", "TARGET", "RESULT", "DETAIL"]
    assert address in text[1] and text[-1] == "1 action(s)"

    # --since/--until select by time: an hour ago keeps it, a time before it was done finds nothing newer.
    recent = json.loads(console_cli("console", "activity", "--json", "--since", "1h", config=srv.config).stdout)
    assert newest["id"] in {r["id"] for r in recent}
    time.sleep(1.1)
    later = json.loads(console_cli("console", "activity", "--json", "--since", "1s", config=srv.config).stdout)
    assert newest["id"] not in {r["id"] for r in later}
    before = json.loads(console_cli("console", "activity", "--json", "--until", "2000-01-01T00:00:00Z",
                                    config=srv.config).stdout)
    assert before == []
    bad = console_cli("console", "activity", "--limit", "0", config=srv.config, check=False)
    assert bad.returncode != 0 and "--limit" in bad.stderr
    future = console_cli("console", "activity", "--since", "+1h", config=srv.config, check=False)
    assert future.returncode != 0 and "future" in future.stderr

"""`herald audit` and `/admin/audit`: one row per link sent or queued, every filter,
every format, and the same rows over HTTP behind the admin token.

The ledger every test here builds (audit_ledger), under `herald serve --no-worker`
with `herald worker --until-empty` run by the test:

  phase 1  T1  verify-email   alice  transactional      sent, superseded (C1-alice redeemed)
           C1  verify-email   alice bob carol dave      campaign "verify" (--from-accounts --unverified)
               alice: clicked and redeemed; bob: clicked; carol, dave: nothing
  -------- a whole-second boundary B --------
  phase 2  C2  reset-password alice erin                campaign "reset", --link-lifetime 2s: expired
           T2  reset-password erin   transactional      sent, still valid
           X   sign-in        frank  transactional      expired unsent (maxQueueWait.signIn 1s)
"""

from __future__ import annotations

import csv
import io
import json
import time
from types import SimpleNamespace

import pytest
import requests

from helpers import action_link, query
from http_support import CONTINUE, HTTP_TIMEOUT, ok, code_of
from campaign_support import (
    AUDIT_FIELDS, CAMPAIGNS, admin_get, campaign_config, campaign_from_csv, create_campaign, iso_seconds, message_id,
    next_whole_second, parse_iso, run, write_recipients,
)

ALICE, BOB, CAROL, DAVE, ERIN, FRANK = (f"{n}@audit.test" for n in ("alice", "bob", "carol", "dave", "erin", "frank"))
BROWSER = "AuditBrowser/2.0 (redeems)"
CLICKER = "AuditClicker/1.0 (only looks)"


def _one_id(db, sql: str, *params) -> int:
    rows = query(db, sql, params)
    assert len(rows) == 1, f"expected one row for {sql} {params}, got {rows}"
    return rows[0]["id"]


def audit_ledger(server, herald) -> SimpleNamespace:
    srv = server("--no-worker", campaigns=CAMPAIGNS, worker={"maxQueueWait": {"signIn": "1s"}})
    config, db = srv.config, srv.db_path
    accounts = write_recipients(srv.cwd / "accounts.csv", "email,displayName,emailVerified",
                                [f"{e},{e.split('@')[0].title()},false" for e in (ALICE, BOB, CAROL, DAVE)]
                                + [f"{ERIN},Erin,true"])
    run(herald, "accounts", "import", str(accounts), config=config)

    t1 = herald.send("verify-email", ALICE, config=config)
    c1 = create_campaign(herald, config, "verify", "--action", "verify-email", "--from-accounts", "--unverified")
    assert (c1["imported"], c1["rejected"]) == (4, 0), c1["stdout"]
    c1 = c1["id"]
    herald.worker_until_empty(config)

    boundary = next_whole_second()

    c2 = campaign_from_csv(herald, config, srv.cwd, "reset", [ALICE, ERIN], "--link-lifetime", "2s",
                           action="reset-password")
    t2 = herald.send("reset-password", ERIN, config=config)
    x = herald.send("sign-in", FRANK, "--continue-url", CONTINUE, config=config)
    time.sleep(1.5)  # the sign-in mail is now older than maxQueueWait.signIn
    herald.worker_until_empty(config)

    ids = {
        "T1": t1, "T2": t2, "X": x,
        **{f"C1-{who}": _one_id(db, "SELECT id FROM outbox WHERE campaign_id = ? AND recipient = ?", c1, email)
           for who, email in (("alice", ALICE), ("bob", BOB), ("carol", CAROL), ("dave", DAVE))},
        **{f"C2-{who}": _one_id(db, "SELECT id FROM outbox WHERE campaign_id = ? AND recipient = ?", c2, email)
           for who, email in (("alice", ALICE), ("erin", ERIN))},
    }
    by_message_id = {row["message_id"].strip("<>"): row["id"] for row in query(db, "SELECT id, message_id FROM outbox")}
    links = {by_message_id[message_id(m["message"])]: action_link(m["message"]) for m in srv.capture.messages()}
    assert set(links) == set(ids.values()) - {x}, "every row but the stale sign-in must have been mailed"

    for key, agent in (("C1-alice", BROWSER), ("C1-bob", CLICKER)):
        page = requests.get(srv.local(links[ids[key]]), headers={"User-Agent": agent}, timeout=HTTP_TIMEOUT)
        assert page.status_code == 200, f"GET {page.url} -> {page.status_code}"
    ok(srv.post("accounts:update", {"oobCode": code_of(links[ids["C1-alice"]])}, headers={"User-Agent": BROWSER}))

    # Let campaign 2's two-second links run out.
    [last] = query(db, "SELECT max(sent_at) AS at FROM outbox WHERE campaign_id = ?", (c2,))
    time.sleep(max(0.0, last["at"] / 1000 + 2.5 - time.time()))

    # What the scenario relies on, checked in the ledger itself.
    codes = {r["outbox_id"]: r for r in query(db, "SELECT * FROM action_codes WHERE outbox_id IS NOT NULL")}
    now_ms = time.time() * 1000
    assert codes[ids["C1-alice"]]["redeemed_at"] is not None
    assert codes[ids["T1"]]["superseded_at"] is not None and codes[ids["T1"]]["redeemed_at"] is None
    assert all(codes[ids[k]]["expires_at"] < now_ms and codes[ids[k]]["redeemed_at"] is None
               for k in ("C2-alice", "C2-erin")), "--link-lifetime 2s codes must have expired"
    assert codes[ids["T2"]]["expires_at"] > now_ms + 600_000
    states = {r["id"]: r["state"] for r in query(db, "SELECT id, state FROM outbox")}
    assert states == {i: ("expired" if i == x else "sent") for i in ids.values()}, states

    k = ids
    filters = [
        # name, CLI arguments, /admin/audit parameters, expected rows
        ("everything", [], {}, set(k)),
        ("email", ["--email", ALICE], {"email": ALICE}, {"T1", "C1-alice", "C2-alice"}),
        ("email in capitals", ["--email", ALICE.upper()], {"email": ALICE.upper()}, {"T1", "C1-alice", "C2-alice"}),
        ("campaign", ["--campaign", str(c1)], {"campaign": c1}, {"C1-alice", "C1-bob", "C1-carol", "C1-dave"}),
        ("action", ["--action", "reset-password"], {"action": "reset-password"}, {"C2-alice", "C2-erin", "T2"}),
        ("since", ["--since", iso_seconds(boundary)], {"since": iso_seconds(boundary)}, {"C2-alice", "C2-erin", "T2", "X"}),
        ("until", ["--until", iso_seconds(boundary)], {"until": iso_seconds(boundary)},
         {"T1", "C1-alice", "C1-bob", "C1-carol", "C1-dave"}),
        ("since and until", ["--since", iso_seconds(boundary - 3600), "--until", iso_seconds(boundary)],
         {"since": iso_seconds(boundary - 3600), "until": iso_seconds(boundary)},
         {"T1", "C1-alice", "C1-bob", "C1-carol", "C1-dave"}),
        ("redeemed", ["--redeemed"], {"status": "redeemed"}, {"C1-alice"}),
        ("unredeemed", ["--unredeemed"], {"status": "unredeemed"},
         {"T1", "C1-bob", "C1-carol", "C1-dave", "C2-alice", "C2-erin", "T2"}),
        ("expired", ["--expired"], {"status": "expired"}, {"C2-alice", "C2-erin", "X"}),
        ("campaign and unredeemed", ["--campaign", str(c1), "--unredeemed"], {"campaign": c1, "status": "unredeemed"},
         {"C1-bob", "C1-carol", "C1-dave"}),
        ("email and since", ["--email", ALICE, "--since", iso_seconds(boundary)],
         {"email": ALICE, "since": iso_seconds(boundary)}, {"C2-alice"}),
        ("action and expired", ["--action", "sign-in", "--expired"], {"action": "sign-in", "status": "expired"}, {"X"}),
    ]
    return SimpleNamespace(srv=srv, config=config, db=db, ids=ids, c1=c1, c2=c2, boundary=boundary, filters=filters)


def audit_jsonl(herald, config, *args) -> list:
    result = run(herald, "audit", *args, "--format", "jsonl", config=config)
    rows = []
    for number, line in enumerate(result.stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            pytest.fail(f"audit jsonl line {number} is not JSON: {line!r}")
    return rows


def names(world, rows: list) -> set:
    by_id = {v: k for k, v in world.ids.items()}
    return {by_id.get(r["id"], f"unknown id {r['id']}") for r in rows}


def test_every_audit_filter_selects_the_rows_the_ledger_holds(server, herald):
    world = audit_ledger(server, herald)
    wrong = []
    for name, args, _, expected in world.filters:
        rows = audit_jsonl(herald, world.config, *args)
        got = names(world, rows)
        if got != expected or len(rows) != len(got):
            wrong.append(f"{name} ({' '.join(args) or 'no filter'}): got {sorted(got)} ({len(rows)} rows), "
                         f"expected {sorted(expected)}")
    assert not wrong, "audit filters disagree with the ledger:\n" + "\n".join(wrong)


def test_audit_rows_tell_the_story_of_each_link(herald, server):
    world = audit_ledger(server, herald)
    rows = {r["id"]: r for r in audit_jsonl(herald, world.config)}
    ledger = {r["id"]: r for r in query(world.db, "SELECT * FROM outbox")}
    ids = world.ids
    for key, outbox_id in ids.items():
        row, stored = rows[outbox_id], ledger[outbox_id]
        where = f"{key} (outbox {outbox_id}): {row}"
        assert set(row) == set(AUDIT_FIELDS), f"keys {sorted(row)}, expected {AUDIT_FIELDS}"
        assert row["recipient"] == stored["recipient"] and row["action"] == stored["action"], where
        assert row["state"] == stored["state"], where
        assert abs(parse_iso(row["queuedAt"]).timestamp() - stored["queued_at"] / 1000) < 1, where
        assert isinstance(row["expired"], bool) and isinstance(row["superseded"], bool), where
        if key.startswith("C1"):
            assert row["campaign"] in (world.c1, str(world.c1), "verify"), where
        elif key.startswith("C2"):
            assert row["campaign"] in (world.c2, str(world.c2), "reset"), where
        else:
            assert row["campaign"] is None, where
        if key == "X":
            assert row["sentAt"] is None and not row["smtpReply"], where
        else:
            assert abs(parse_iso(row["sentAt"]).timestamp() - stored["sent_at"] / 1000) < 1, where
            assert "250" in row["smtpReply"], where
        assert (row["firstClickAt"] is not None) == (key in ("C1-alice", "C1-bob")), where
        assert (row["redeemedAt"] is not None) == (key == "C1-alice"), where
        assert row["expired"] == (key in ("C2-alice", "C2-erin", "X")), where
        assert row["superseded"] == (key == "T1"), where

    alice = rows[ids["C1-alice"]]
    assert "127.0.0.1" in alice["redeemedIp"] and alice["redeemedUserAgent"] == BROWSER, alice
    assert parse_iso(alice["firstClickAt"]) <= parse_iso(alice["redeemedAt"])
    bob = rows[ids["C1-bob"]]
    assert bob["redeemedIp"] is None and bob["redeemedUserAgent"] is None, bob


def test_audit_csv_and_table_formats_carry_the_same_rows(herald, server):
    world = audit_ledger(server, herald)
    jsonl = {r["id"]: r for r in audit_jsonl(herald, world.config)}

    text = run(herald, "audit", "--format", "csv", config=world.config).stdout
    reader = csv.DictReader(io.StringIO(text, newline=""))
    assert reader.fieldnames == AUDIT_FIELDS, f"csv header {reader.fieldnames}"
    rows = {int(r["id"]): r for r in reader}
    assert set(rows) == set(jsonl)
    alice = rows[world.ids["C1-alice"]]
    assert alice["recipient"] == ALICE and alice["redeemedUserAgent"] == BROWSER, alice
    assert alice["campaign"] in (str(world.c1), "verify"), alice
    assert alice["superseded"].lower() in ("false", "0") and rows[world.ids["T1"]]["superseded"].lower() in ("true", "1")
    assert rows[world.ids["T1"]]["campaign"] == "", "no campaign: an empty cell"

    for args in (["--format", "table"], []):  # table is the default
        table = run(herald, "audit", *args, config=world.config).stdout
        lines = [line for line in table.splitlines() if line.strip()]
        header = lines[0].lower()
        assert all(word in header for word in ("recipient", "action", "campaign", "state")), f"no header: {lines[0]}"
        listed = [line for line in lines[1:] if "@audit.test" in line]
        assert len(listed) == len(jsonl), f"{len(listed)} table rows for {len(jsonl)} audit rows:\n{table}"


def test_refused_audit_filters_print_no_rows(herald, tmp_path):
    config = campaign_config(tmp_path)
    herald.send("verify-email", ALICE, config=config)
    for args in (["--since", "last tuesday"], ["--until", "2026-13-45T99:00:00Z"], ["--redeemed", "--unredeemed"],
                 ["--format", "xml"], ["--action", "launch-rockets"]):
        result = run(herald, "audit", *args, config=config, check=False)
        assert result.returncode != 0 and result.stdout.strip() == "", f"audit {' '.join(args)} was accepted"


def test_admin_audit_serves_the_cli_rows_as_json_lines_behind_the_admin_token(herald, server):
    world = audit_ledger(server, herald)
    assert admin_get(world.srv, "/admin/audit", token=None).status_code == 401
    assert admin_get(world.srv, "/admin/audit", token="not-the-token").status_code == 401
    assert admin_get(world.srv, "/admin/audit", status="sideways").status_code == 400

    wrong = []
    for name, args, params, _ in world.filters:
        resp = admin_get(world.srv, "/admin/audit", **params)
        assert resp.status_code == 200, f"{name}: {resp.status_code} {resp.text[:300]}"
        assert resp.headers.get("Content-Type", "").startswith("application/x-ndjson"), resp.headers
        served = sorted((json.loads(line) for line in resp.text.splitlines() if line.strip()), key=lambda r: r["id"])
        printed = sorted(audit_jsonl(herald, world.config, *args), key=lambda r: r["id"])
        if served != printed:
            wrong.append(f"{name} {params}: HTTP ids {[r['id'] for r in served]} vs CLI ids {[r['id'] for r in printed]}"
                         + ("" if [r["id"] for r in served] != [r["id"] for r in printed] else " (fields differ)"))
    assert not wrong, "/admin/audit and `herald audit` disagree:\n" + "\n".join(wrong)

"""Worker crashes and shutdowns: a dead worker's claims come back, nothing is lost."""

from __future__ import annotations

import re
import signal

from helpers import by_recipient, db_path, query, wait_until, write_config


def queue_many(herald, config, count: int, prefix: str) -> dict:
    return {f"{prefix}{i:02d}@x.test": herald.send("verify-email", f"{prefix}{i:02d}@x.test", config=config)
            for i in range(count)}


def assert_tallies_match_the_rows(tmp_path) -> None:
    tallies = {(r["state"], r["action"], r["campaign"]): r["n"]
               for r in query(db_path(tmp_path), "SELECT * FROM outbox_tallies WHERE n <> 0")}
    rows = {(r["state"], r["action"], r["campaign"]): r["n"] for r in query(
        db_path(tmp_path), "SELECT state, action, COALESCE(campaign_id, 0) AS campaign, COUNT(*) AS n FROM outbox GROUP BY 1, 2, 3")}
    assert tallies == rows, (tallies, rows)


def three_digits(ms: int) -> int:
    """Milliseconds rounded down to three significant digits, as the `delays` rollups bucket them."""
    unit = 1
    while ms // unit >= 1000:
        unit *= 10
    return ms // unit * unit


# Every rollup family (migration v30, Sources/HeraldStore/Ledger/Rollups.swift) counted again from the rows, as
# RollupRecount (Tests/HeraldStoreTests/OutboxTallyTests.swift) and the migration's backfill count them: rows of
# (family, campaign, bucket, label, n). `delays` is bucketed in Python (three_digits).
ROLLUP_RECOUNTS = {
    "attempts": """
        SELECT 0, finished_at / 60000, outcome || ' ' || CASE WHEN reply_code IS NULL THEN 'connection'
               ELSE CAST(reply_code / 100 AS TEXT) || 'xx' END, COUNT(*)
        FROM delivery_attempts GROUP BY 2, 3""",
    "links": "SELECT 0, at / 60000, kind, COUNT(*) FROM link_events GROUP BY 2, 3",
    "sent": """
        SELECT campaign_id, sent_at / 1000, '', COUNT(*) FROM outbox
        WHERE campaign_id IS NOT NULL AND sent_at IS NOT NULL GROUP BY 1, 2""",
    "replies": """
        SELECT campaign_id, 0, COALESCE(CAST(last_reply_code AS TEXT), 'none'), COUNT(*) FROM outbox
        WHERE campaign_id IS NOT NULL AND attempts > 0 GROUP BY 1, 3""",
    "clicked": """
        SELECT o.campaign_id, 0, '', COUNT(DISTINCT o.id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
        JOIN outbox o ON o.id = c.outbox_id WHERE e.kind = 'click' AND o.campaign_id IS NOT NULL GROUP BY 1""",
    "redeemed": """
        SELECT campaign, first / 1000, '', COUNT(*) FROM (
            SELECT o.campaign_id AS campaign, MIN(c.redeemed_at) AS first FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
            WHERE o.campaign_id IS NOT NULL AND c.redeemed_at IS NOT NULL GROUP BY o.id)
        GROUP BY 1, 2""",
    "delays": """
        SELECT o.campaign_id, MIN(c.redeemed_at) - o.sent_at, '', 1 FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
        WHERE o.campaign_id IS NOT NULL AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id""",
    # Per message its latest bounce (a hard one before any soft) and its latest complaint, by kind and status class.
    "feedback": """
        SELECT campaign, 0, kind || ' ' || COALESCE(class, ''), COUNT(*) FROM (
            SELECT o.campaign_id AS campaign, f.kind,
                CASE WHEN f.status GLOB '[245].[0-9]*' THEN substr(f.status, 1, instr(substr(f.status, 3), '.') + 1) END AS class,
                ROW_NUMBER() OVER (PARTITION BY f.outbox_id, f.kind = 'complaint' ORDER BY f.kind = 'hard' DESC, f.id DESC) AS latest
            FROM mail_feedback f JOIN outbox o ON o.id = f.outbox_id WHERE o.campaign_id IS NOT NULL AND f.kind <> 'unsubscribe')
        WHERE latest = 1 GROUP BY 1, 3""",
    "webhooks": "SELECT 0, 0, state || ' ' || endpoint, COUNT(*) FROM webhook_deliveries GROUP BY 3",
}


def rollup_recount(db) -> dict:
    """{(family, campaign, bucket, label): n} counted from the rows."""
    counts: dict = {}
    for family, sql in ROLLUP_RECOUNTS.items():
        for row in query(db, sql):
            campaign, bucket, label, n = row.values()
            if family == "delays":
                bucket = three_digits(bucket)
            key = (family, campaign, bucket, label)
            counts[key] = counts.get(key, 0) + n
    return counts


def rollup_mismatches(db) -> dict:
    """{(family, campaign, bucket, label): (rollups' n, recount)} where the rollups' nonzero rows and the recount differ."""
    kept = {(r["family"], r["campaign"], r["bucket"], r["label"]): r["n"]
            for r in query(db, "SELECT family, campaign, bucket, label, n FROM rollups WHERE n <> 0")}
    recount = rollup_recount(db)
    return {key: (kept.get(key, 0), recount.get(key, 0)) for key in sorted(set(kept) | set(recount), key=repr)
            if kept.get(key, 0) != recount.get(key, 0)}


def assert_rollups_match_the_rows(tmp_path, families: tuple = ()) -> dict:
    """The rollups (what the overview's charts, the live rates and the reports read) equal a recount from the rows:
    a killed transaction took its triggers' increments with it, and nothing was counted twice. `families` must each
    have counted something (so the comparison is not vacuous). Returns the recount."""
    db = db_path(tmp_path)
    mismatches = rollup_mismatches(db)
    assert not mismatches, f"rollups (kept, recounted) that differ: {mismatches}"
    recount = rollup_recount(db)
    empty = [f for f in families if not any(key[0] == f and n for key, n in recount.items())]
    assert not empty, f"nothing counted in {empty}: the scenario did not exercise them"
    return recount


def kill_the_worker_mid_batch(herald, capture, config) -> None:
    """Starts a worker and SIGKILLs it once 5 messages have arrived: some sends are unrecorded, a batch half done."""
    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.received_count >= 5 or worker.proc.poll() is not None,
               timeout=60, what="5 messages received")
    assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"
    worker.proc.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)


def test_sigkill_mid_batch_loses_nothing(herald, start_capture, tmp_path):
    capture = start_capture(delay=0.05)
    # The default lease (30m) stays: a dead worker is found by its PID (or a stale heartbeat).
    # Two unrecorded sends per connection: with the default 64, 40 messages could never show a duplicate too many.
    config = write_config(tmp_path, capture, smtp={"connections": 2}, worker={"unrecordedPerConnection": 2})
    recipients = queue_many(herald, config, 40, "crash")

    kill_the_worker_mid_batch(herald, capture, config)
    # The outbox tallies (what the metrics and the console read) lost nothing with the killed transaction either.
    assert_tallies_match_the_rows(tmp_path)
    assert_rollups_match_the_rows(tmp_path, families=("attempts",))

    herald.worker_until_empty(config, timeout=120)  # takes back the killed worker's claimed rows
    assert_tallies_match_the_rows(tmp_path)
    assert_rollups_match_the_rows(tmp_path, families=("attempts",))

    received = by_recipient(capture.messages())
    missing = sorted(set(recipients) - set(received))
    assert not missing, f"never delivered: {missing}"
    duplicated = sorted(r for r, msgs in received.items() if len(msgs) > 1)
    # Per connection at most worker.unrecordedPerConnection (here 2) sends are unrecorded at any moment (one
    # being recorded, one being sent), so a crash may duplicate at most 2 x 2 connections.
    assert len(duplicated) <= 4, f"more duplicates than in-flight sends (2 per connection): {duplicated}"
    states = {m["recipient"]: m["state"] for m in herald.messages(config)}
    assert states == {r: "sent" for r in recipients}


def test_sigkill_mid_campaign_keeps_the_rollups_exact(herald, start_capture, tmp_path):
    # Campaign mail touches the per-campaign families too: `sent` (per second) and `replies` (by last reply code:
    # `none` while a claimed row has no reply yet, 550 for the recipients the server refuses).
    capture = start_capture(delay=0.05, script=["rcpt=refused:550:5.1.1 No such user"])
    config = write_config(tmp_path, capture, smtp={"connections": 2}, worker={"unrecordedPerConnection": 2},
                          campaigns={"unsubscribeMailto": "unsubscribe@herald-demo.example",
                                     "unsubscribeUrl": "https://app.example.com/unsubscribe"})
    emails = [f"{'refused' if i % 8 == 3 else 'member'}{i:02d}@x.test" for i in range(40)]
    recipients = tmp_path / "recipients.csv"
    recipients.write_text("email\n" + "".join(f"{e}\n" for e in emails), encoding="utf-8")
    created = herald("campaign", "create", "crash", "--action", "verify-email", "--recipients", str(recipients), config=config)
    match = re.search(r"\bcampaign (\d+)", created.stdout)
    assert match, f"no `campaign <id>` in the summary:\n{created.stdout}"
    campaign = int(match.group(1))
    queue_many(herald, config, 4, "single")  # transactional mail beside it: campaign 0's rows

    kill_the_worker_mid_batch(herald, capture, config)
    assert_tallies_match_the_rows(tmp_path)
    assert_rollups_match_the_rows(tmp_path, families=("attempts", "replies"))

    herald.worker_until_empty(config, timeout=120)
    assert_tallies_match_the_rows(tmp_path)
    recount = assert_rollups_match_the_rows(tmp_path, families=("attempts", "sent", "replies"))
    refused = sum(1 for e in emails if e.startswith("refused"))
    # Every campaign message was attempted and counted once by its last reply, and each sent one once per second.
    assert {key[3]: n for key, n in recount.items() if key[:2] == ("replies", campaign)} == \
        {"250": len(emails) - refused, "550": refused}
    assert sum(n for key, n in recount.items() if key[:2] == ("sent", campaign)) == len(emails) - refused
    states = {m["recipient"]: m["state"] for m in herald.messages(config)}
    assert {r for r, s in states.items() if s != "sent"} == {e for e in emails if e.startswith("refused")}


def test_sigterm_finishes_in_flight_sends_and_exits_0(herald, start_capture, tmp_path):
    capture = start_capture(delay=0.3)
    config = write_config(tmp_path, capture)
    recipients = queue_many(herald, config, 10, "term")

    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.received_count >= 2 or worker.proc.poll() is not None,
               timeout=60, what="2 messages received")
    assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, worker.stderr()

    # Everything the server accepted before the shutdown is recorded as sent.
    delivered = set(by_recipient(capture.messages()))
    sent = {m["recipient"] for m in herald.messages(config, state="sent")}
    assert sent == delivered
    assert len(delivered) < len(recipients), "the worker stopped before draining the queue"

    herald.worker_until_empty(config, timeout=120)
    received = by_recipient(capture.messages())
    assert sorted(received) == sorted(recipients)
    assert all(len(msgs) == 1 for msgs in received.values()), "a graceful stop never duplicates"
    assert {m["state"] for m in herald.messages(config)} == {"sent"}

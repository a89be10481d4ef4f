"""Worker crashes and shutdowns: a dead worker's claims come back, nothing is lost."""

from __future__ import annotations

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


def test_sigkill_mid_batch_loses_nothing(herald, start_capture, tmp_path):
    capture = start_capture(delay=0.05)
    # The default lease (30m) stays: a dead worker is found by its PID (or a stale heartbeat).
    # Two unrecorded sends per connection: with the default 64, 40 messages could never show a duplicate too many.
    config = write_config(tmp_path, capture, smtp={"connections": 2}, worker={"unrecordedPerConnection": 2})
    recipients = queue_many(herald, config, 40, "crash")

    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.received_count >= 5 or worker.proc.poll() is not None,
               timeout=60, what="5 messages received")
    assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"
    worker.proc.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    # The outbox tallies (what the metrics and the console read) lost nothing with the killed transaction either.
    assert_tallies_match_the_rows(tmp_path)

    herald.worker_until_empty(config, timeout=120)  # takes back the killed worker's claimed rows
    assert_tallies_match_the_rows(tmp_path)

    received = by_recipient(capture.messages())
    missing = sorted(set(recipients) - set(received))
    assert not missing, f"never delivered: {missing}"
    duplicated = sorted(r for r, msgs in received.items() if len(msgs) > 1)
    # Per connection at most worker.unrecordedPerConnection (here 2) sends are unrecorded at any moment (one
    # being recorded, one being sent), so a crash may duplicate at most 2 x 2 connections.
    assert len(duplicated) <= 4, f"more duplicates than in-flight sends (2 per connection): {duplicated}"
    states = {m["recipient"]: m["state"] for m in herald.messages(config)}
    assert states == {r: "sent" for r in recipients}


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

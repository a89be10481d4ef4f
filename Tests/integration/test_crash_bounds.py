"""Crash bounds (issue #9): what a SIGKILLed worker may cost, and how fast its rows come back.

Per SMTP connection the worker has a sending thread, and one ledger desk claims and records for all of
them (group commits); at most worker.unrecordedPerConnection sends per connection are unrecorded at any moment, so a
SIGKILL can duplicate at most that many x connections messages. These tests set the bound to 2 (one being recorded,
one being sent) to check the accounting at its tightest; the default, 32, follows the same rule. Workers register with a heartbeat; rows
held by a dead worker (its PID gone on this host, or its heartbeat older than
worker.heartbeatTimeout) return to the queue at the next claim by any worker - within seconds,
not after the 30-minute lease - and only the rows that may have been started (at most the bound per
connection) are charged an `interrupted` attempt; rows never started return with their attempt
count unchanged and no attempt row. A worker that finds rows held by a live worker waits for
them and says so.

Every test here runs with the default lease (30m): nothing may wait for it.
"""

from __future__ import annotations

import signal
import time

from helpers import by_recipient, duplicates_by_crash, kill_when_received, query, wait_until, write_config

CONNECTIONS = 2
UNRECORDED = 2  # worker.unrecordedPerConnection: per connection one recording, one sending
IN_FLIGHT = UNRECORDED * CONNECTIONS  # unrecorded sends a SIGKILL may catch
WORKER = {"unrecordedPerConnection": UNRECORDED}


def queue_many(herald, config, count: int, prefix: str) -> list:
    recipients = [f"{prefix}{i:02d}@x.test" for i in range(count)]
    for rcpt in recipients:
        herald.send("verify-email", rcpt, config=config)
    return recipients


def outbox(db) -> dict:
    """{recipient: row} with id, state and attempts."""
    return {r["recipient"]: r for r in query(db, "SELECT id, recipient, state, attempts FROM outbox")}


def interrupted_counts(db) -> dict:
    """{outbox_id: number of 'interrupted' attempt rows}."""
    rows = query(db, "SELECT outbox_id, count(*) AS n FROM delivery_attempts "
                     "WHERE outcome = 'interrupted' GROUP BY outbox_id")
    return {r["outbox_id"]: r["n"] for r in rows}


def receptions(messages: list) -> dict:
    """{recipient: [index in acceptance order, ...]} over captured messages."""
    out: dict = {}
    for index, message in enumerate(messages):
        for rcpt in message["rcpt_tos"]:
            out.setdefault(rcpt.lower(), []).append(index)
    return out


# --------------------------------------------------------------------------- (a)
KILL_AT = (5, 14, 23, 32, 41)  # cumulative accepted messages at which the running worker is SIGKILLed


def test_worst_moment_kills_duplicate_at_most_two_sends_per_connection(herald, start_capture, tmp_path, db):
    # A slow DATA reply keeps one send in flight on each connection while the previous outcome
    # is being recorded: the worst moment for a SIGKILL.
    capture = start_capture(delay=0.2)
    config = write_config(tmp_path, capture, smtp={"connections": CONNECTIONS}, worker=WORKER)
    recipients = queue_many(herald, config, 60, "worst")

    boundaries = []  # received_count once each killed worker's connections had settled
    for k in KILL_AT:
        worker = herald.start("worker", config=config, name="worker")
        # The killed worker's rows must come back at once (PID gone), not after the 30 min lease.
        kill_when_received(worker.proc, capture, k, timeout=20)
        time.sleep(0.5)  # a DATA the dead worker had in progress is either accepted by now or never
        boundaries.append(capture.received_count)
    result = herald.worker_until_empty(config, timeout=30)

    messages = capture.messages()
    seen = receptions(messages)
    missing = sorted(set(recipients) - set(seen))
    assert not missing, f"never delivered: {missing}"

    per_crash, unexplained = duplicates_by_crash(seen, boundaries)
    interrupted = interrupted_counts(db)
    print(f"kills at {list(KILL_AT)} -> accepted {boundaries}; duplicates per crash {per_crash}; "
          f"interrupted attempts {sum(interrupted.values())} on rows {sorted(interrupted)}")
    assert not unexplained, f"sent twice with no crash in between: {unexplained}"
    assert max(per_crash) <= IN_FLIGHT, (
        f"duplicates per crash {per_crash} (kills at {boundaries} accepted messages): a SIGKILL may only "
        f"duplicate the {IN_FLIGHT} unrecorded sends of {CONNECTIONS} connections")

    rows = outbox(db)
    assert {r: row["state"] for r, row in rows.items()} == {r: "sent" for r in recipients}
    total = sum(interrupted.values())
    assert total <= len(KILL_AT) * IN_FLIGHT, (
        f"{total} interrupted attempts for {len(KILL_AT)} kills: only the rows that may have been started "
        f"(at most {IN_FLIGHT} per crash) are charged, not every claimed row")
    for rcpt, row in rows.items():
        charged = interrupted.get(row["id"], 0)
        assert row["attempts"] <= 1 + charged, (
            f"{rcpt}: {row['attempts']} attempts but {charged} interrupted: a row the dead worker never "
            "started must return with its attempt count unchanged")
        repeats = len(seen.get(rcpt, [])) - 1
        assert charged >= repeats, (
            f"{rcpt} was delivered {repeats + 1} times but charged {charged} interrupted attempts: a send a "
            "crash left unrecorded was started and is charged")
    assert not [l for l in result.stderr.splitlines() if l.startswith("error: ")], result.stderr


# --------------------------------------------------------------------------- (b)
def test_a_killed_workers_rows_return_within_seconds_not_after_the_lease(herald, start_capture, tmp_path, db):
    slow = start_capture(delay=0.3)
    fast = start_capture()
    config = write_config(tmp_path, slow, smtp={"connections": CONNECTIONS}, worker=WORKER)  # worker.lease: 30m
    fast_config = write_config(tmp_path, fast, name="fast.yaml", smtp={"connections": CONNECTIONS}, worker=WORKER)
    recipients = queue_many(herald, config, 30, "orphan")

    worker = herald.start("worker", config=config, name="worker")
    kill_when_received(worker.proc, slow, 4, timeout=20)
    time.sleep(0.5)
    killed_at = slow.received_count

    started = time.monotonic()
    result = herald.worker_until_empty(fast_config, timeout=20)  # fails if it waits anywhere near the lease
    elapsed = time.monotonic() - started
    if elapsed > 5:  # the rows came back late: it must have said what it was waiting for
        waits = [l for l in result.stderr.splitlines() if "waiting" in l.lower()]
        assert any("row" in l.lower() or "worker" in l.lower() for l in waits), (
            f"`worker --until-empty` took {elapsed:.1f}s without saying what it waited for\n{result.stderr}")

    seen = receptions(slow.messages() + fast.messages())
    missing = sorted(set(recipients) - set(seen))
    assert not missing, f"never delivered: {missing}"
    duplicated = sorted(r for r, idx in seen.items() if len(idx) > 1)
    assert len(duplicated) <= IN_FLIGHT, f"more duplicates than unrecorded sends: {duplicated}"

    rows = outbox(db)
    assert {r: row["state"] for r, row in rows.items()} == {r: "sent" for r in recipients}
    interrupted = interrupted_counts(db)
    assert len(interrupted) <= IN_FLIGHT and sum(interrupted.values()) <= IN_FLIGHT, (
        f"interrupted attempts {interrupted} after one kill with {killed_at} accepted: only the rows that "
        f"may have been started (at most {IN_FLIGHT}) are charged")
    attempts = query(db, "SELECT outbox_id, outcome FROM delivery_attempts ORDER BY id")
    outcomes: dict = {}
    for a in attempts:
        outcomes.setdefault(a["outbox_id"], []).append(a["outcome"])
    for rcpt, row in rows.items():
        charged = interrupted.get(row["id"], 0)
        assert row["attempts"] == 1 + charged, (
            f"{rcpt}: {row['attempts']} attempts, {charged} interrupted; outcomes {outcomes.get(row['id'])}")
        if not charged:
            assert outcomes.get(row["id"]) == ["sent"], (
                f"{rcpt} was never started by the dead worker, yet its attempts are {outcomes.get(row['id'])}")


# --------------------------------------------------------------------------- (c)
def test_until_empty_waits_for_rows_a_live_worker_holds(herald, start_capture, tmp_path, db):
    slow = start_capture(delay=2.0)
    fast = start_capture()
    config = write_config(tmp_path, slow)  # one connection
    fast_config = write_config(tmp_path, fast, name="fast.yaml")
    recipients = queue_many(herald, config, 4, "held")

    holder = herald.start("worker", config=config, name="holder")
    wait_until(lambda: slow.data_commands >= 1 or holder.proc.poll() is not None,
               timeout=20, what="the holder's first DATA")
    assert holder.proc.poll() is None, f"the holder exited early:\n{holder.stderr()}"

    waiter = herald.start("worker", "--until-empty", config=fast_config, name="waiter")
    code = waiter.wait(timeout=30)
    states_at_exit = {row["state"] for row in outbox(db).values()}
    assert code == 0, f"`worker --until-empty` exited {code}\n{waiter.stderr()}"
    assert "waiting" in waiter.stderr().lower(), (
        f"`worker --until-empty` waited for another worker's rows without saying so\n{waiter.stderr()}")
    assert states_at_exit == {"sent"}, (
        f"`worker --until-empty` exited while rows were still {states_at_exit - {'sent'}}: it must wait for "
        "the live worker to finish them")
    assert holder.proc.poll() is None, f"the holder exited\n{holder.stderr()}"

    # Rows of a live worker are not taken over: every message went out exactly once.
    received = by_recipient(slow.messages() + fast.messages())
    assert sorted(received) == sorted(recipients)
    duplicated = {r: len(m) for r, m in received.items() if len(m) != 1}
    assert not duplicated, f"a live worker's rows were sent again: {duplicated}"
    assert slow.received_count >= 1, "the holder's row was sent by the holder"

    holder.signal(signal.SIGTERM)
    assert holder.wait(timeout=20) == 0, holder.stderr()

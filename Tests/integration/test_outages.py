"""Relay outages: connection-level failures charge no attempt, back off, and end only by age.

The rule under test (README, *Delivery outcomes*): a refused connection, a connect or reply
timeout, TLS/AUTH failures, a non-220 greeting, a 4xx/5xx to EHLO/HELO, any 421 and a 4xx/5xx
to MAIL FROM (except 552) are the server's or the connection's trouble, not the message's. The
row stays queued/deferred with `attempts` unchanged, a `delivery_attempts` row with outcome
`connection` keeps the reply, and the connection pauses with exponential backoff
(`worker.connectionBackoffBase` doubling up to `worker.connectionBackoffCap`). Only replies to
RCPT and DATA speak about one message. A message still ends by age: `worker.maxQueueLifetime`
after it first became due it is `expired`.

Every test runs one SMTP connection (`smtp.connections: 1`) with short SMTP timeouts; the 30 min
`worker.lease` of helpers.py is valid (it must be >= 2 x (connectTimeout + timeout + dataTimeout)).
The stalls here come before the final dot: silence after it is test_possibly_delivered.py's.
"""

from __future__ import annotations

import math
import re
import signal
import time

import pytest

from helpers import (
    attempt_rows,
    by_recipient,
    connection_attempts,
    connection_failures,
    wait_until,
    write_config,
    write_recipients,
)

SMTP_FAST = {"connectTimeout": "2s", "timeout": "2s", "connections": 1}
TIMEOUT_RE = re.compile(r"time\s?d?\s?out", re.I)  # "Timeout was reached", "timed out", "response timeout"
UNFINISHED = {"queued", "deferred", "sending"}


def outage_config(tmp_path, capture, *, backoff_cap: str = "1s", lifetime=None, smtp=None, worker=None):
    """write_config() with short SMTP timeouts, a 1 s connection backoff base and a quick poll."""
    worker_options = {
        "connectionBackoffBase": "1s",
        "connectionBackoffCap": backoff_cap,
        "backoffBase": "1s",
        "backoffCap": "2s",
        "pollInterval": "250ms",
    }
    if lifetime is not None:
        worker_options["maxQueueLifetime"] = lifetime
    worker_options.update(worker or {})
    return write_config(tmp_path, capture, smtp={**SMTP_FAST, **(smtp or {})}, worker=worker_options)


def queue_bulk(herald, config, tmp_path, addresses: list) -> None:
    """Queue one verify-email per address with a single `herald send --recipients`."""
    herald("send", "verify-email", "--recipients", write_recipients(tmp_path, addresses), config=config)


def outcomes(db) -> list:
    return [row["outcome"] for row in attempt_rows(db)]


def assert_all_sent_once(herald, config, capture, db, recipients: list) -> list:
    """Every recipient's row is sent with exactly one charged attempt, one 'sent' attempt row,
    and the server got each message once."""
    rows = herald.messages(config)
    assert sorted(r["recipient"] for r in rows) == sorted(recipients)
    wrong = [(r["recipient"], r["state"], r["attempts"], r["lastReply"]) for r in rows
             if r["state"] != "sent" or r["attempts"] != 1]
    assert not wrong, f"rows not sent with attempts == 1: {wrong}"
    received = by_recipient(capture.messages())
    assert sorted(received) == sorted(recipients)
    assert all(len(m) == 1 for m in received.values()), "each message delivered exactly once"
    for row in rows:
        sent = [a for a in attempt_rows(db, row["id"]) if a["outcome"] != "connection"]
        assert [a["outcome"] for a in sent] == ["sent"], f"{row['recipient']}: {sent}"
    return rows


# --------------------------------------------------------------------------- relay down, then back
OUTAGE = 8.0  # seconds the relay refuses connections while the worker runs
BACKOFF_BASE, BACKOFF_CAP = 1.0, 2.0


def test_relay_down_then_back_delivers_everything_without_charging_attempts(herald, start_capture, tmp_path, db):
    capture = start_capture()
    capture.pause_listening()
    config = outage_config(tmp_path, capture, backoff_cap=f"{BACKOFF_CAP:g}s")
    recipients = [f"down{i:02d}@x.test" for i in range(50)]
    queue_bulk(herald, config, tmp_path, recipients)

    worker = herald.start("worker", "--until-empty", config=config, name="worker")
    wait_until(lambda: connection_attempts(db) or worker.proc.poll() is not None,
               timeout=10, what="a 'connection' attempt row for the refused connection")
    outage_started = time.monotonic()
    while time.monotonic() - outage_started < OUTAGE:
        assert worker.proc.poll() is None, (
            f"worker --until-empty exited during the outage (it must keep waiting):\n{worker.stderr()}")
        time.sleep(0.2)

    during = herald.messages(config)
    assert {r["state"] for r in during} <= UNFINISHED, {r["state"] for r in during}
    charged = [(r["recipient"], r["state"], r["attempts"]) for r in during
               if r["state"] != "sending" and r["attempts"] != 0]
    assert not charged, f"a refused connection charged attempts: {charged}"
    assert any(r["lastReply"] for r in during), "the connection error shows in lastReply"

    resumed_at = time.time()
    capture.resume_listening()
    assert worker.wait(timeout=30) == 0, worker.stderr()

    first_delivery = min(m["received_at"] for m in capture.messages()) - resumed_at
    # The next connection attempt comes at most one backoff pause (<= cap) after the relay is back.
    assert first_delivery < BACKOFF_CAP + 3, f"first delivery {first_delivery:.1f}s after the relay came back"

    assert_all_sent_once(herald, config, capture, db, recipients)
    assert set(outcomes(db)) == {"connection", "sent"}, "no deferred/failed/dead/interrupted attempt"
    refused = connection_attempts(db)
    assert all(row["reply_text"] for row in refused), "each 'connection' row keeps the error text"
    # Backoff bounds the refused attempts. One connection (smtp.connections 1) pauses base * 2^(k-1),
    # capped: 1 s, 2 s, 2 s, ... Even with 50-100 % jitter each pause is >= base/2 first and then
    # >= cap/2, so from the first refusal until the relay came back (window W, ~8.5 s) at most
    # 2 + (W - base/2) / (cap/2) attempts fit: 11 here (5 without jitter). Retrying at
    # pollInterval (250 ms) instead would make ~35.
    window = resumed_at - min(row["started_at"] for row in refused) / 1000
    bound = 2 + math.ceil((window - BACKOFF_BASE / 2) / (BACKOFF_CAP / 2))
    refusals = connection_failures(db)
    assert 2 <= refusals <= bound, (
        f"{refusals} refused connection attempts in a {window:.1f}s outage (bound {bound})")


def test_greeting_554_on_the_first_connections_then_all_sent(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["greeting@3=554:5.7.1 Service unavailable; try again later"])
    config = outage_config(tmp_path, capture)
    recipients = [f"greet{i:02d}@x.test" for i in range(20)]
    queue_bulk(herald, config, tmp_path, recipients)

    started = time.monotonic()
    herald.worker_until_empty(config, timeout=30)
    assert time.monotonic() - started < 30

    assert_all_sent_once(herald, config, capture, db, recipients)
    assert capture.connections == 4, "three refused greetings, then one connection for all 20"
    assert connection_failures(db) == 3
    for row in connection_attempts(db):
        assert "5.7.1 Service unavailable" in row["reply_text"], row
        assert row["reply_code"] in (554, None), row
    assert set(outcomes(db)) == {"connection", "sent"}


def test_ehlo_refused_ends_expired_not_failed(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["ehlo=550:5.7.1 Client host rejected: access denied"])
    config = outage_config(tmp_path, capture, lifetime="4s")
    queued_at = time.monotonic()
    ids = [herald.send("verify-email", f"ehlo{i}@x.test", config=config) for i in range(3)]

    herald.worker_until_empty(config, timeout=30)  # exit 0 is checked
    elapsed = time.monotonic() - queued_at
    assert 4 <= elapsed < 25, f"worker --until-empty took {elapsed:.1f}s with maxQueueLifetime 4s"

    for outbox_id in ids:
        row = herald.message(config, outbox_id)
        assert row["state"] == "expired", row
        assert row["attempts"] == 0, row
        assert row["lastReply"].startswith("expired:"), row
        assert row["sentAt"] is None
    refused = connection_attempts(db)
    assert refused, "the refused EHLO is recorded as a 'connection' attempt"
    assert all("Client host rejected" in row["reply_text"] for row in refused), refused
    assert set(outcomes(db)) == {"connection"}, "never failed, deferred or dead"
    assert capture.ehlo_commands >= 1
    assert capture.mail_commands == 0 and capture.data_commands == 0
    assert capture.messages() == []


def test_idle_421_is_a_reconnect_not_a_failure(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["idle=1"])  # 421 4.4.2 ... timeout exceeded after 1 s idle
    config = outage_config(tmp_path, capture)
    herald("migrate", config=config)  # before two processes open the fresh ledger at once
    worker = herald.start("worker", config=config, name="worker")

    first = herald.send("verify-email", "before@x.test", config=config)
    wait_until(lambda: herald.message(config, first)["state"] not in UNFINISHED,
               timeout=20, what="the first message settled", interval=0.2)
    wait_until(lambda: capture.idle_timeouts >= 1, timeout=5,
               what="the server's idle 421 on the worker's open connection")
    time.sleep(0.5)
    assert worker.proc.poll() is None, worker.stderr()

    second = herald.send("verify-email", "after@x.test", config=config)
    wait_until(lambda: herald.message(config, second)["state"] not in UNFINISHED,
               timeout=20, what="the second message settled", interval=0.2)
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0, worker.stderr()

    for outbox_id in (first, second):
        row = herald.message(config, outbox_id)
        assert (row["state"], row["attempts"]) == ("sent", 1), row
        assert [a["outcome"] for a in attempt_rows(db, outbox_id)] == ["sent"]
    assert connection_attempts(db) == [], "a 421 on an idle connection is not a failure"
    assert capture.connections == 2, "the second message went out on a fresh connection"
    assert [m["session"] for m in capture.messages()] == [1, 2]


def test_stall_closes_the_connection_and_the_next_send_uses_a_new_one(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["mail@1=stall"])  # the first MAIL FROM never gets a reply
    config = outage_config(tmp_path, capture)
    ids = [herald.send("verify-email", f"stall{i}@x.test", config=config) for i in range(2)]

    started = time.monotonic()
    herald.worker_until_empty(config, timeout=30)
    assert time.monotonic() - started < 20

    assert_all_sent_once(herald, config, capture, db, ["stall0@x.test", "stall1@x.test"])
    assert capture.connections >= 2, "the stalled connection was not reused"
    assert all(m["session"] >= 2 for m in capture.messages()), "nothing was accepted on the stalled connection"
    assert (capture.mail_commands, capture.data_commands) == (3, 2)
    [timed_out] = connection_attempts(db)
    assert timed_out["outbox_id"] in ids
    assert TIMEOUT_RE.search(timed_out["reply_text"]), timed_out
    assert [a["outcome"] for a in attempt_rows(db, timed_out["outbox_id"])] == ["connection", "sent"]


def test_sigterm_during_a_stall_exits_0_within_one_timeout(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["mail=stall"])
    config = outage_config(tmp_path, capture, smtp={"connectTimeout": "3s", "timeout": "3s"})
    outbox_id = herald.send("verify-email", "stuck@x.test", config=config)

    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.mail_commands >= 1 or worker.proc.poll() is not None,
               timeout=20, what="the worker's MAIL FROM reaching the stalling server", interval=0.02)
    data_at = time.monotonic()
    assert worker.proc.poll() is None, worker.stderr()
    worker.signal(signal.SIGTERM)
    term_at = time.monotonic()
    assert worker.wait(timeout=20) == 0, worker.stderr()
    exited = time.monotonic()

    # smtp.timeout (3 s) bounds the in-flight exchange, counted from MAIL FROM; a second wait of the
    # same length (e.g. a QUIT on the dead connection) would take >= 6 s.
    assert exited - term_at < 6, f"exit {exited - term_at:.1f}s after SIGTERM"
    assert exited - data_at < 3 + 2.5, f"exit {exited - data_at:.1f}s after the stalled MAIL FROM (smtp.timeout 3s)"
    row = herald.message(config, outbox_id)
    assert row["state"] in ("queued", "deferred"), row
    assert row["attempts"] == 0, "a stall charges no attempt"
    assert {a["outcome"] for a in attempt_rows(db, outbox_id)} <= {"connection"}
    assert capture.connections == 1, "no new connection after SIGTERM"


def test_relay_down_until_queue_lifetime_ends_expired_and_until_empty_exits_0(herald, start_capture, tmp_path, db):
    capture = start_capture()
    capture.pause_listening()
    config = outage_config(tmp_path, capture, lifetime="3s")
    queued_at = time.monotonic()
    ids = [herald.send("verify-email", f"gone{i}@x.test", config=config) for i in range(2)]
    worker = herald.start("worker", "--until-empty", config=config, name="worker")

    def waiting_line():  # the wording is the worker's; it must say it waits, and for what
        return next((line for line in worker.stderr().splitlines() if re.search(r"\bwaiting for \S", line, re.I)),
                    None)

    while True:
        running = worker.proc.poll() is None  # sampled before reading stderr
        line = waiting_line()
        if line or not running or time.monotonic() - queued_at > 10:
            break
        time.sleep(0.05)
    seen_after = time.monotonic() - queued_at
    assert line, f"worker --until-empty did not log what it waits for:\n{worker.stderr()}"
    assert running, f"the waiting line must come from a running worker:\n{worker.stderr()}"
    assert seen_after < 3, f"logged only {seen_after:.1f}s after queueing, past maxQueueLifetime 3s: {line}"

    assert worker.wait(timeout=30) == 0, worker.stderr()
    assert time.monotonic() - queued_at >= 3
    for outbox_id in ids:
        row = herald.message(config, outbox_id)
        assert (row["state"], row["attempts"]) == ("expired", 0), row
        assert row["lastReply"].startswith("expired:"), row
    assert connection_attempts(db), "the refused connections are recorded"
    assert set(outcomes(db)) == {"connection"}
    assert capture.connections == 0


# --------------------------------------------------------------------------- MAIL FROM refusals
@pytest.mark.parametrize(
    "script, refusals, text",
    [
        ("mail@2=451:4.7.1 Sender temporarily rejected, try later", 2, "4.7.1 Sender temporarily rejected"),
        ("mail@2=550:5.7.1 Sender address rejected: access denied", 2, "5.7.1 Sender address rejected"),
        ("mail@1=421:4.7.0 Too many connections from your host", 1, "4.7.0 Too many connections"),
    ],
    ids=["451", "550", "421"],
)
def test_mail_from_refusal_is_connection_level(herald, start_capture, tmp_path, db, script, refusals, text):
    capture = start_capture(script=[script])  # mail@N: the first N MAIL FROM commands
    config = outage_config(tmp_path, capture)
    recipients = [f"mail{i}@x.test" for i in range(5)]
    queue_bulk(herald, config, tmp_path, recipients)

    herald.worker_until_empty(config, timeout=30)

    assert_all_sent_once(herald, config, capture, db, recipients)
    assert connection_failures(db) == refusals
    assert all(text in row["reply_text"] for row in connection_attempts(db)), connection_attempts(db)
    assert set(outcomes(db)) == {"connection", "sent"}
    assert capture.mail_commands == len(recipients) + refusals


def test_mail_from_552_fails_the_message(herald, start_capture, tmp_path, db):
    """552 to MAIL FROM (SIZE) speaks about the message: failed, not a connection problem."""
    capture = start_capture(script=["mail=552:5.3.4 Message size exceeds fixed limit"])
    config = outage_config(tmp_path, capture)
    outbox_id = herald.send("verify-email", "big@x.test", config=config)

    herald.worker_until_empty(config, timeout=30)

    row = herald.message(config, outbox_id)
    assert (row["state"], row["attempts"], row["lastReplyCode"]) == ("failed", 1, 552), row
    assert [(a["outcome"], a["reply_code"]) for a in attempt_rows(db, outbox_id)] == [("failed", 552)]
    assert capture.mail_commands == 1 and capture.messages() == []

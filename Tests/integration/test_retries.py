"""Failure handling: retry, permanent failure, dead letters, timeouts, queue expiry.

Connection-level failures (refused, timeouts, greeting, EHLO, MAIL FROM, any 421, a connection
lost without a reply), all before the message's final dot, charge no attempt: see also test_outages.py.
Silence after the final dot is test_possibly_delivered.py's."""

from __future__ import annotations

import re
import time

import pytest

from helpers import attempt_rows, delivery_attempts, write_config

FAST_RETRY = {"backoffBase": "1s", "backoffCap": "2s"}
FAST_RECONNECT = {"connectionBackoffBase": "1s", "connectionBackoffCap": "1s"}
CONTINUE = "https://app.example.com/finish"


@pytest.mark.parametrize(
    "script, first_outcome, first_code, first_text, charged",
    [
        # a 4xx to DATA speaks about the message: deferred, and the attempt counts
        ("1:451:4.3.0 Try again", "deferred", 451, "Try again", 2),
        # the connection closed at MAIL FROM, before any of the message: connection-level, not charged
        ("mail@1=drop", "connection", None, None, 1),
        # the connection closed after the final dot, without a reply: possibly delivered, charged
        ("1:drop", "possibly-delivered", None, "possibly delivered", 2),
    ],
    ids=["451", "dropped-connection", "dropped-after-the-final-dot"],
)
def test_transient_failure_is_retried_then_sent(herald, start_capture, tmp_path, db,
                                                script, first_outcome, first_code, first_text, charged):
    capture = start_capture(script=[script])
    config = write_config(tmp_path, capture, worker={**FAST_RETRY, **FAST_RECONNECT})
    outbox_id = herald.send("verify-email", "retry@x.test", config=config)
    herald.worker_until_empty(config)

    row = herald.message(config, outbox_id)
    assert row["state"] == "sent"
    assert row["attempts"] == charged
    assert row["lastReplyCode"] == 250
    attempts = attempt_rows(db, outbox_id)  # in the order written
    assert [(a["outcome"], a["reply_code"]) for a in attempts] == [
        (first_outcome, first_code),
        ("sent", 250),
    ]
    if charged == 2:  # the first attempt is the message's, the retry its second
        assert [a["attempt"] for a in attempts] == [1, 2]
    if first_text:
        assert first_text in attempts[0]["reply_text"]
    assert all(a["started_at"] and a["finished_at"] for a in attempts)
    assert len(capture.messages()) == 1, "delivered exactly once"


def test_permanent_failure_is_not_retried(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["*:550:5.1.1 No such user"])
    config = write_config(tmp_path, capture, worker=FAST_RETRY)
    outbox_id = herald.send("verify-email", "nobody@x.test", config=config)
    herald.worker_until_empty(config)  # exit 0 is checked

    row = herald.message(config, outbox_id)
    assert row["state"] == "failed"
    assert row["attempts"] == 1
    assert row["lastReplyCode"] == 550
    assert "No such user" in row["lastReply"]
    assert row["sentAt"] is None
    [attempt] = delivery_attempts(db, outbox_id)
    assert attempt["reply_code"] == 550
    assert capture.data_commands == 1
    assert capture.messages() == []


def test_exhausted_attempts_end_dead(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["*:451:4.3.0 Try again later"])
    config = write_config(tmp_path, capture, worker={**FAST_RETRY, "maxAttempts": 2})
    outbox_id = herald.send("verify-email", "unlucky@x.test", config=config)
    herald.worker_until_empty(config)

    row = herald.message(config, outbox_id)
    assert row["state"] == "dead"
    assert row["attempts"] == 2
    assert row["lastReplyCode"] == 451
    assert [a["reply_code"] for a in delivery_attempts(db, outbox_id)] == [451, 451]
    assert capture.data_commands == 2
    assert capture.messages() == []


@pytest.mark.parametrize(
    "failure",
    ["greeting-421", "greeting-554", "dropped-connection", "connection-refused"],
)
def test_connection_level_failure_is_transient(herald, start_capture, tmp_path, db, failure):
    """A failure of the server or the connection charges no attempt, even with maxAttempts 1:
    the row waits (with connection backoff) and ends only by age, as `expired`."""
    if failure == "greeting-421":
        capture = start_capture(script=["greeting=421"])
    elif failure == "greeting-554":
        capture = start_capture(script=["greeting=554:5.7.1 Service unavailable"])
    elif failure == "dropped-connection":
        capture = start_capture(script=["mail=drop"])  # before the message: a drop after it is possibly delivered
    else:
        capture = start_capture()
        capture.stop()  # nothing listens on that port any more
    config = write_config(tmp_path, capture, worker={**FAST_RETRY, **FAST_RECONNECT, "maxAttempts": 1,
                                                     "maxQueueLifetime": "3s"})
    outbox_id = herald.send("verify-email", "flaky@x.test", config=config)
    herald.worker_until_empty(config, timeout=30)  # exit 0 is checked

    row = herald.message(config, outbox_id)
    assert row["state"] == "expired", row  # never dead or failed because of the server
    assert row["attempts"] == 0
    assert row["lastReply"].startswith("expired:"), row
    attempts = attempt_rows(db, outbox_id)
    assert attempts, "each connection-level failure is recorded"
    assert {a["outcome"] for a in attempts} == {"connection"}
    assert all(a["reply_text"] for a in attempts)
    if failure.startswith("greeting"):
        assert all(failure[-3:] in a["reply_text"] for a in attempts), attempts
    assert capture.messages() == []


def test_stalled_server_times_out(herald, start_capture, tmp_path, db):
    """The server never answers MAIL FROM: smtp.timeout must bound the whole
    attempt (including any QUIT on the dead connection). A reply timeout before
    the final dot is connection-level: no attempt is charged, the connection is
    replaced, and the row ends by age."""
    capture = start_capture(script=["mail=stall"])
    config = write_config(tmp_path, capture, smtp={"connectTimeout": "2s", "timeout": "2s"},
                          worker={**FAST_RETRY, **FAST_RECONNECT, "maxAttempts": 1, "maxQueueLifetime": "5s"})
    outbox_id = herald.send("verify-email", "slow@x.test", config=config)
    started = time.monotonic()
    herald.worker_until_empty(config, timeout=30)
    elapsed = time.monotonic() - started

    assert elapsed < 30, f"worker needed {elapsed:.1f}s with smtp.timeout 2s"
    row = herald.message(config, outbox_id)
    assert row["state"] == "expired", row
    assert row["attempts"] == 0
    attempts = attempt_rows(db, outbox_id)
    assert attempts and {a["outcome"] for a in attempts} == {"connection"}
    assert all(a["reply_code"] is None for a in attempts)
    assert all(re.search(r"time\s?d?\s?out", a["reply_text"], re.I) for a in attempts), attempts
    assert capture.connections >= 2, "a timed-out connection is closed, the retry uses a new one"
    assert capture.messages() == []


def test_stale_sign_in_expires_but_verify_mail_does_not(herald, capture, tmp_path):
    config = write_config(tmp_path, capture, worker={"maxQueueWait": {"signIn": "1s"}})
    sign_in = herald.send("sign-in", "late@x.test", "--continue-url", CONTINUE, config=config)
    verify = herald.send("verify-email", "patient@x.test", config=config)
    time.sleep(2)  # let the sign-in outlive maxQueueWait.signIn before any worker runs
    herald.worker_until_empty(config)

    assert herald.message(config, sign_in)["state"] == "expired"
    assert herald.message(config, verify)["state"] == "sent"
    assert [m["rcpt_tos"] for m in capture.messages()] == [["patient@x.test"]]

"""Silence after the final dot: the message may have been delivered.

A relay that takes longer to answer a message's final dot than `smtp.dataTimeout` may have taken the
message all the same (RFC 1047). Herald charges the attempt, records it as `possibly-delivered`, sends the
message again at its own backoff at most `worker.maxUncertainRetries` times, then leaves the row
`possibly-delivered`. The reply to the final dot has a timeout of its own (RFC 5321's 10 minutes by
default), so a relay that is merely slow there is not a failure at all.

The relay here is the capture server's `late=SECONDS` rule: it keeps each message as its final dot
arrives and answers 250 only SECONDS later, whether or not the client is still there.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from helpers import attempt_rows, write_config

SMTP_FAST = {"connectTimeout": "2s", "timeout": "2s", "connections": 3}
FAST_RETRY = {"backoffBase": "1s", "backoffCap": "1s", "connectionBackoffBase": "1s", "connectionBackoffCap": "1s",
              "pollInterval": "250ms"}
RECIPIENTS = ["slow0@x.test", "slow1@x.test", "slow2@x.test"]


@pytest.mark.parametrize("retries", [None, 0], ids=["default-retries", "no-retries"])
def test_a_relay_answering_the_final_dot_too_late_gets_a_bounded_number_of_copies(
        herald, start_capture, tmp_path, db, retries):
    capture = start_capture(script=["*:late=6"])  # every final dot answered after 6 s
    worker = dict(FAST_RETRY)
    if retries is not None:
        worker["maxUncertainRetries"] = retries
    allowed = 1 + (1 if retries is None else retries)  # the documented default is 1
    config = write_config(tmp_path, capture, smtp={**SMTP_FAST, "dataTimeout": "3s"}, worker=worker)
    ids = [herald.send("verify-email", address, config=config) for address in RECIPIENTS]

    started = time.monotonic()
    herald.worker_until_empty(config, timeout=90)
    elapsed = time.monotonic() - started

    copies = Counter(m["rcpt_tos"][0] for m in capture.messages())
    assert copies == {address: allowed for address in RECIPIENTS}, f"{copies} in {elapsed:.1f} s"
    for outbox_id in ids:
        row = herald.message(config, outbox_id)
        assert row["state"] == "possibly-delivered", row
        assert row["attempts"] == allowed and row["possiblyDelivered"] == allowed, row
        assert row["sentAt"] is None and row["lastReplyCode"] is None, row
        assert row["lastReply"].startswith("possibly delivered: timed out after 3 s waiting for the reply to the end of data"), row
        attempts = attempt_rows(db, outbox_id)
        assert [a["outcome"] for a in attempts] == ["possibly-delivered"] * allowed, attempts
        assert [a["attempt"] for a in attempts] == list(range(1, allowed + 1)), "each copy is charged"
    # What the operator sees: the rows' state, in the table and by filter.
    table = herald("messages", config=config).stdout
    for address in RECIPIENTS:
        [line] = [line for line in table.splitlines() if address in line]
        assert "possibly-delivered" in line.split(), line
        assert "possibly delivered: " in line, line
    assert sorted(m["id"] for m in herald.messages(config, state="possibly-delivered")) == sorted(ids)
    # Nothing more goes out later: the rows are finished.
    herald.worker_until_empty(config, timeout=30)
    assert Counter(m["rcpt_tos"][0] for m in capture.messages()) == copies


def test_a_relay_slower_at_the_final_dot_than_smtp_timeout_delivers_once(herald, start_capture, tmp_path, db):
    """smtp.timeout (1 s) bounds every other wait; the final dot's reply has smtp.dataTimeout (10 min by default)."""
    capture = start_capture(script=["*:late=3"])
    config = write_config(tmp_path, capture, smtp={"connectTimeout": "2s", "timeout": "1s"}, worker=FAST_RETRY)
    outbox_id = herald.send("verify-email", "patient@x.test", config=config)
    herald.worker_until_empty(config, timeout=60)

    row = herald.message(config, outbox_id)
    assert (row["state"], row["attempts"], row["possiblyDelivered"], row["lastReplyCode"]) == ("sent", 1, 0, 250), row
    assert [a["outcome"] for a in attempt_rows(db, outbox_id)] == ["sent"]
    assert [m["rcpt_tos"] for m in capture.messages()] == [["patient@x.test"]], "one copy"


def test_a_possibly_delivered_message_can_be_retried_by_name_only(herald, start_capture, tmp_path, db):
    capture = start_capture(script=["1:late=4"])  # only the first final dot is late
    config = write_config(tmp_path, capture, smtp={**SMTP_FAST, "dataTimeout": "2s"},
                          worker={**FAST_RETRY, "maxUncertainRetries": 0})
    outbox_id = herald.send("verify-email", "again@x.test", config=config)
    herald.worker_until_empty(config, timeout=60)
    assert herald.message(config, outbox_id)["state"] == "possibly-delivered"

    # The default retry (failed and dead) leaves it alone: its recipient may have it already.
    result = herald("messages", "retry", "--all", config=config)
    assert "retried 0 message(s)" in result.stdout, result.stdout
    result = herald("messages", "retry", "--state", "possibly-delivered", "--all", config=config)
    assert f"retried 1 message(s): {outbox_id}" in result.stdout, result.stdout
    herald.worker_until_empty(config, timeout=60)
    row = herald.message(config, outbox_id)
    assert (row["state"], row["attempts"], row["possiblyDelivered"]) == ("sent", 1, 0), row
    assert [a["outcome"] for a in attempt_rows(db, outbox_id)] == ["possibly-delivered", "sent"]
    assert [m["rcpt_tos"] for m in capture.messages()] == [["again@x.test"], ["again@x.test"]]

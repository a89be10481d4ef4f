"""Webhooks: signed JSON events about mail, through an outbox of their own.

A real receiver (http.server on loopback) checks every `Herald-Signature` and records the events; a real
`herald worker` sends through the capture SMTP server. Events are written in the transaction of the change
they report, so a receiver that is down or failing loses nothing and never slows sending.
"""

from __future__ import annotations

import json
import time

from helpers import action_link, db_path, ledger_key, parse_link, query, wait_until, write_config, write_recipients
from webhook_receiver import OTHER_SECRET, SECRET, Receiver, free_port


def hooks(**endpoints) -> dict:
    """webhooks config: fast retries for tests, then the endpoints."""
    return {"timeout": "2s", "maxAttempts": 50, "backoffBase": "1s", "backoffCap": "2s", **endpoints}


def deliveries(tmp_path) -> list:
    return query(db_path(tmp_path), "SELECT * FROM webhook_deliveries ORDER BY id")


def strings(value) -> list:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def test_sent_events_arrive_signed_and_carry_neither_code_nor_link(herald, capture, tmp_path):
    receiver = Receiver(SECRET).start()
    try:
        config = write_config(tmp_path, capture, webhooks=hooks(app={"url": receiver.url, "secret": SECRET}))
        outbox_id = herald.send("reset-password", "ada@example.com", config=config)
        worker = herald.start("worker", config=config)
        [event] = wait_until(lambda: receiver.of_type("sent"), 20, "the sent event")
        assert event["message"]["id"] == str(outbox_id)
        assert event["message"]["action"] == "reset-password" and event["message"]["recipient"] == "ada@example.com"
        assert event["message"]["state"] == "sent" and event["message"]["campaign"] is None
        assert event["smtpReply"]["code"] == 250, event
        assert event["occurredAt"].endswith("Z")
        assert not receiver.bad_signatures
        [mail] = capture.messages()
        code = parse_link(action_link(mail["message"]))["params"]["oobCode"]
        text = json.dumps(event)
        assert code not in text and "oobCode" not in text and "http" not in text, "neither the code nor the link"
        wait_until(lambda: [d for d in deliveries(tmp_path) if d["state"] == "delivered"], 10, "the delivery recorded")
        worker.signal(15)
        assert worker.wait(30) == 0
    finally:
        receiver.stop()


def test_each_endpoint_gets_only_the_events_it_asked_for(herald, start_capture, tmp_path):
    capture = start_capture(script=["rcpt=bad:550:5.1.1 no such user"])
    everything = Receiver(SECRET).start()
    failures = Receiver(OTHER_SECRET).start()
    try:
        config = write_config(tmp_path, capture, webhooks=hooks(
            all={"url": everything.url, "secret": SECRET},
            failures={"url": failures.url, "secret": OTHER_SECRET, "events": ["failed", "dead"]}))
        recipients = write_recipients(tmp_path, ["good@example.com", "bad@example.com"])
        herald("send", "verify-email", "--recipients", str(recipients), config=config)
        worker = herald.start("worker", config=config)
        wait_until(lambda: len(everything.events) == 2, 20, "both events at the all-events endpoint")
        wait_until(lambda: failures.events, 20, "the failed event")
        time.sleep(1.5)
        assert sorted(e["type"] for e in everything.events) == ["failed", "sent"]
        assert [(e["type"], e["message"]["recipient"]) for e in failures.events] == [("failed", "bad@example.com")]
        assert failures.events[0]["smtpReply"]["code"] == 550
        assert failures.events[0]["id"] == everything.of_type("failed")[0]["id"], "one event id across endpoints"
        assert len(deliveries(tmp_path)) == 3, "one row per endpoint and event"
        worker.signal(15)
        worker.wait(30)
    finally:
        everything.stop()
        failures.stop()


def test_a_failing_or_absent_receiver_loses_nothing_and_never_slows_sending(herald, capture, tmp_path):
    port = free_port()
    config = write_config(tmp_path, capture, webhooks=hooks(app={"url": f"http://127.0.0.1:{port}/hooks", "secret": SECRET}))
    addresses = [f"user{i}@example.com" for i in range(30)]
    herald("send", "reset-password", "--recipients", str(write_recipients(tmp_path, addresses)), config=config)
    worker = herald.start("worker", config=config)
    try:
        # Nobody listens: every message still goes at once.
        wait_until(lambda: len(capture.messages()) == 30, 20, "all mail sent while the receiver is absent")
        wait_until(lambda: len(deliveries(tmp_path)) == 30, 10, "every send's event in the ledger")
        wait_until(lambda: any(d["last_error"] for d in deliveries(tmp_path)), 10, "a failed POST recorded")
        assert {d["state"] for d in deliveries(tmp_path)} == {"queued"}
        listed = herald("webhooks", "list", config=config).stdout
        assert "queued 30" in listed and "last error" in listed, listed

        # Up but failing: retried, still nothing lost.
        receiver = Receiver(SECRET, port=port, status=500).start()
        wait_until(lambda: receiver.requests >= 2, 20, "retries against a failing receiver")
        assert not receiver.events
        wait_until(lambda: "HTTP 500" in herald("webhooks", "list", config=config).stdout, 10, "the 500 as the last error")

        # Healthy: every event arrives, once each.
        receiver.status = 200
        wait_until(lambda: len(receiver.events) == 30, 40, "every sent event after the receiver recovered")
        assert sorted(e["message"]["recipient"] for e in receiver.events) == sorted(addresses)
        assert len({e["id"] for e in receiver.events}) == 30
        wait_until(lambda: {d["state"] for d in deliveries(tmp_path)} == {"delivered"}, 10, "all deliveries recorded")
        assert "queued 0  delivered 30  dead 0" in herald("webhooks", "list", config=config).stdout
        receiver.stop()
    finally:
        worker.signal(15)
        worker.wait(30)


def test_webhooks_test_list_and_replay(herald, capture, tmp_path):
    receiver = Receiver(SECRET).start()
    try:
        config = write_config(tmp_path, capture, webhooks=hooks(app={"url": receiver.url, "secret": SECRET, "events": ["sent"]}))
        result = herald("webhooks", "test", "app", config=config)
        assert "app: HTTP 200" in result.stdout
        [test] = receiver.of_type("test")
        assert test["endpoint"] == "app" and not receiver.bad_signatures
        unknown = herald("webhooks", "test", "nope", config=config, check=False)
        assert unknown.returncode == 64 and "no webhook endpoint 'nope'" in unknown.stderr

        herald.send("verify-email", "ada@example.com", config=config)
        herald.worker_until_empty(config)
        [row] = deliveries(tmp_path)
        assert row["event"] == "sent", "the event commits with the send, whether or not this worker got to post it"
        worker = herald.start("worker", config=config)
        wait_until(lambda: receiver.of_type("sent"), 20, "the sent event")
        wait_until(lambda: deliveries(tmp_path)[0]["state"] == "delivered", 10, "the delivery recorded")
        listed = json.loads(herald("webhooks", "list", "--json", config=config).stdout)
        assert listed[0]["endpoint"] == "app" and listed[0]["delivered"] == 1 and listed[0]["events"] == ["sent"]

        assert "0 deliveries queued again" in herald("webhooks", "replay", config=config).stdout, "dead ones by default"
        replayed = herald("webhooks", "replay", "--state", "delivered", "--endpoint", "app", "--since", "1h", config=config)
        assert "1 delivery queued again" in replayed.stdout
        wait_until(lambda: len(receiver.of_type("sent")) == 2, 20, "the replayed event")
        first, second = receiver.of_type("sent")
        assert first == second, "a replay posts the same event again (same id)"
        worker.signal(15)
        worker.wait(30)
    finally:
        receiver.stop()


def test_bad_webhook_configuration_is_refused_naming_the_key(herald, tmp_path):
    cases = [
        ({"app": {"url": "http://example.com/hooks", "secret": SECRET}}, "webhooks.app.url"),
        ({"app": {"url": "https://example.com/hooks", "secret": "short"}}, "webhooks.app.secret"),
        ({"app": {"url": "https://example.com/hooks", "secret": SECRET, "events": ["opened"]}}, "unknown event 'opened'"),
        ({"App": {"url": "https://example.com/hooks", "secret": SECRET}}, "webhooks.App"),
    ]
    for endpoints, needle in cases:
        config = write_config(tmp_path, webhooks=endpoints)
        result = herald("webhooks", "list", config=config, check=False)
        assert result.returncode == 1 and needle in result.stderr, (endpoints, result.stderr)
    config = write_config(tmp_path, webhooks={"app": {"url": "https://example.com/hooks"}})
    from_env = herald("webhooks", "list", config=config, env={"HERALD_WEBHOOKS_APP_SECRET": SECRET})
    assert "app  https://example.com/hooks  all events" in from_env.stdout


def test_a_message_out_of_attempts_is_reported_dead_signed_and_without_its_code(herald, start_capture, tmp_path):
    capture = start_capture(script=["*:451:4.3.0 Try again later"])  # every DATA deferred: the row runs out of attempts
    receiver = Receiver(SECRET).start()
    try:
        config = write_config(tmp_path, capture, worker={"maxAttempts": 2, "backoffBase": "1s", "backoffCap": "2s"},
                              webhooks=hooks(app={"url": receiver.url, "secret": SECRET}))
        outbox_id = herald.send("reset-password", "unlucky@example.com", config=config)
        worker = herald.start("worker", config=config)
        [event] = wait_until(lambda: receiver.of_type("dead"), 20, "the dead event")
        assert event["message"]["id"] == str(outbox_id)
        assert event["message"]["action"] == "reset-password" and event["message"]["recipient"] == "unlucky@example.com"
        assert event["message"]["state"] == "dead" and event["message"]["attempts"] == 2
        assert event["message"]["sentAt"] is None
        assert event["smtpReply"]["code"] == 451 and "Try again later" in event["smtpReply"]["text"], event
        assert event["occurredAt"].endswith("Z")
        assert not receiver.bad_signatures
        time.sleep(1.5)
        assert [e["type"] for e in receiver.events] == ["dead"], "a deferral is no event; the end is one dead event"
        assert capture.data_commands == 2 and capture.messages() == []

        row = herald.message(config, outbox_id)
        assert row["state"] == "dead" and row["attempts"] == 2 and row["lastReplyCode"] == 451, row
        # The code never reached anyone: no string in the event is a code the ledger knows (by its key and hash).
        hashes = {bytes(r["code_hash"]) for r in query(db_path(tmp_path), "SELECT code_hash FROM action_codes")}
        assert hashes, "the message was given a code"
        text = json.dumps(event)
        assert "oobCode" not in text and "http" not in text, "neither the code nor the link"
        assert not [s for s in strings(event) if ledger_key(s) in hashes], "an action code in the event"
        wait_until(lambda: [d for d in deliveries(tmp_path) if d["event"] == "dead" and d["state"] == "delivered"],
                   10, "the delivery recorded")
        worker.signal(15)
        assert worker.wait(30) == 0
    finally:
        receiver.stop()

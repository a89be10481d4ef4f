"""STARTTLS, certificate verification and SMTP AUTH."""

from __future__ import annotations

import re

import pytest

from helpers import delivery_attempts, write_config

USER, PASSWORD = "alice", "s3cret-Pa55word"
WRONG_PASSWORD = "not-the-Pa55word"


@pytest.fixture
def tls_capture(start_capture, tls_cert):
    """STARTTLS required before MAIL, AUTH required (only offered after STARTTLS)."""
    return start_capture(tls=tls_cert, require_starttls=True, auth=f"{USER}:{PASSWORD}")


def smtp_settings(**overrides) -> dict:
    return {"requireStartTLS": True, "insecure": True, "username": USER, "password": PASSWORD, **overrides}


def assert_secret_not_leaked(secret: str, *results) -> None:
    for result in results:
        assert secret not in result.stdout and secret not in result.stderr, \
            f"password leaked by {' '.join(result.args[:3])}"


def test_starttls_and_auth_deliver(herald, tls_capture, tmp_path):
    config = write_config(tmp_path, tls_capture, smtp=smtp_settings())
    outbox_id = herald.send("verify-email", "secure@x.test", config=config)
    worker = herald.worker_until_empty(config)
    listing = herald("messages", "--json", config=config)

    [item] = tls_capture.messages()
    assert item["tls"] is True
    assert item["auth_user"] == USER
    assert herald.message(config, outbox_id)["state"] == "sent"
    assert_secret_not_leaked(PASSWORD, worker, listing)


def test_wrong_password_is_an_auth_failure(herald, tls_capture, tmp_path, db):
    config = write_config(tmp_path, tls_capture, smtp=smtp_settings(password=WRONG_PASSWORD),
                          worker={"maxAttempts": 1, "maxQueueLifetime": "2s", "connectionBackoffCap": "1s"})
    outbox_id = herald.send("verify-email", "secure@x.test", config=config)
    worker = herald.worker_until_empty(config)

    row = herald.message(config, outbox_id)
    # An AUTH rejection is the connection's problem (the relay's configuration), not the message's:
    # no attempt is charged, and the row only ends when it outlives worker.maxQueueLifetime.
    assert row["state"] == "expired"
    assert row["attempts"] == 0
    assert row["lastReplyCode"] == 535
    assert re.search(r"authentication failed", row["lastReply"] or ""), row["lastReply"]
    attempts = delivery_attempts(db, outbox_id)
    assert attempts and all(a["outcome"] == "connection" and a["reply_code"] == 535 for a in attempts), attempts
    assert tls_capture.messages() == []
    assert_secret_not_leaked(WRONG_PASSWORD, worker)


def test_password_from_environment_overrides_config(herald, tls_capture, tmp_path):
    config = write_config(tmp_path, tls_capture, smtp=smtp_settings(password=WRONG_PASSWORD),
                          worker={"maxAttempts": 1})
    env = {"HERALD_SMTP_PASSWORD": PASSWORD}
    outbox_id = herald.send("verify-email", "env@x.test", config=config, env=env)
    worker = herald.worker_until_empty(config, env=env)

    assert herald.message(config, outbox_id)["state"] == "sent"
    assert [m["auth_user"] for m in tls_capture.messages()] == [USER]
    assert_secret_not_leaked(PASSWORD, worker)


def test_server_certificate_verified_against_ca_file(herald, tls_capture, tls_cert, tmp_path):
    cert, _key = tls_cert
    config = write_config(tmp_path, tls_capture, smtp=smtp_settings(insecure=False, caFile=str(cert)))
    outbox_id = herald.send("verify-email", "verified@x.test", config=config)
    herald.worker_until_empty(config)

    assert herald.message(config, outbox_id)["state"] == "sent"
    assert [m["tls"] for m in tls_capture.messages()] == [True]


def test_untrusted_certificate_is_refused(herald, tls_capture, tmp_path):
    config = write_config(tmp_path, tls_capture, smtp=smtp_settings(insecure=False),
                          worker={"maxAttempts": 1, "maxQueueLifetime": "2s", "connectionBackoffCap": "1s"})
    outbox_id = herald.send("verify-email", "mitm@x.test", config=config)
    herald.worker_until_empty(config)

    row = herald.message(config, outbox_id)
    assert row["state"] == "expired"
    assert "TLS failed" in row["lastReply"], row["lastReply"]
    assert row["sentAt"] is None
    assert tls_capture.messages() == []


def test_require_starttls_never_falls_back_to_plaintext(herald, start_capture, tmp_path):
    plain = start_capture()  # offers no STARTTLS at all
    config = write_config(tmp_path, plain, smtp={"requireStartTLS": True, "insecure": True},
                          worker={"maxAttempts": 1, "maxQueueLifetime": "2s", "connectionBackoffCap": "1s"})
    outbox_id = herald.send("verify-email", "downgrade@x.test", config=config)
    herald.worker_until_empty(config)

    row = herald.message(config, outbox_id)
    assert row["state"] == "expired"
    assert "TLS failed: the server does not offer STARTTLS" in row["lastReply"], row["lastReply"]
    assert plain.messages() == [], "message went out without TLS"
    assert plain.data_commands == 0

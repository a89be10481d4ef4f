"""Bounces and complaints back to the right outbox row, through `herald bounces ingest` and `herald bounces listen`.

Every message leaves with a VERP envelope sender naming its row under an HMAC; a delivery status notification
(RFC 3464) or a complaint (RFC 5965 ARF) delivered back is recorded against that row: `bounced` or
`complained`, with the diagnostic, and the address is suppressed (hard bounces and complaints at once, soft
bounces after bounces.softLimit). A forged address changes nothing; an auto-reply is ignored.
"""

from __future__ import annotations

import json
import re
import smtplib
import subprocess
import time

from helpers import db_path, query, write_config, write_recipients

DOMAIN = "bounces.test"
VERP = re.compile(r"^bounces\+(\d+)-([0-9a-f]{16})@bounces\.test$")


def config_for(tmp_path, capture, **extra):
    bounces = {"domain": DOMAIN, "softLimit": 2, "listenPort": 0, **extra.pop("bounces", {})}
    return write_config(tmp_path, capture, bounces=bounces, policy={"cooldown": "0s"}, **extra)


def send_three(herald, tmp_path, capture, config) -> dict:
    """Sends verify-email to three addresses; returns {address: (outbox id, envelope sender)}."""
    recipients = write_recipients(tmp_path, ["hard@example.net", "angry@example.net", "full@example.net"])
    herald("send", "verify-email", "--recipients", str(recipients), "--continue-url", "https://app.example.com/done",
           config=config)
    herald.worker_until_empty(config)
    rows = {r["recipient"]: r["id"] for r in query(db_path(tmp_path), "SELECT id, recipient FROM outbox")}
    sent = {}
    for message in capture.messages():
        [rcpt] = message["rcpt_tos"]
        match = VERP.match(message["mail_from"])
        assert match, f"envelope sender {message['mail_from']!r} is not a VERP address of {DOMAIN}"
        assert int(match.group(1)) == rows[rcpt], (message["mail_from"], rows)
        sent[rcpt] = (rows[rcpt], message["mail_from"], message["raw"])
    assert set(sent) == set(rows), sent
    return sent


def dsn(verp: str, recipient: str, status: str, action: str = "failed", diagnostic: str = "") -> bytes:
    diagnostic = diagnostic or f"smtp; 550 {status} <{recipient}>: Recipient address rejected: User unknown"
    return (
        f"Return-Path: <>\r\nFrom: MAILER-DAEMON@mx.example.net (Mail Delivery System)\r\nTo: {verp}\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\nAuto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B1"\r\n\r\n'
        "--B1\r\nContent-Type: text/plain\r\n\r\nI'm sorry to have to inform you that your message could not be delivered.\r\n\r\n"
        "--B1\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.net\r\nArrival-Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nOriginal-Recipient: rfc822;{recipient}\r\nAction: {action}\r\n"
        f"Status: {status}\r\nRemote-MTA: dns; mail.example.net\r\nDiagnostic-Code: {diagnostic}\r\n\r\n"
        "--B1\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"Return-Path: <{verp}>\r\nFrom: noreply@herald-demo.example\r\nTo: {recipient}\r\nSubject: Verify\r\n\r\n--B1--\r\n"
    ).encode()


def arf(verp: str, recipient: str) -> bytes:
    return (
        "From: <staff@hotmail.example>\r\nTo: <abuse@herald-demo.example>\r\nSubject: complaint about message\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=feedback-report; boundary="part1"\r\n\r\n'
        "--part1\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n\r\n"
        "--part1\r\nContent-Type: message/feedback-report\r\n\r\n"
        "Feedback-Type: abuse\r\nUser-Agent: SomeGenerator/1.0\r\nVersion: 1\r\n"
        f"Original-Rcpt-To: <{recipient}>\r\n\r\n"
        "--part1\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\n"
        f"Return-Path: <{verp}>\r\nFrom: noreply@herald-demo.example\r\nTo: {recipient}\r\nSubject: Verify\r\n\r\n"
        "Please verify.\r\n--part1--\r\n"
    ).encode()


def ingest(herald, config, message: bytes, *recipients: str) -> subprocess.CompletedProcess:
    argv = [str(herald.binary), "bounces", "ingest", *[a for r in recipients for a in ("--recipient", r)],
            "--config", str(config)]
    from helpers import herald_env
    return subprocess.run(argv, cwd=herald.cwd, env=herald_env(), input=message, capture_output=True, timeout=60)


def row(tmp_path, outbox_id: int) -> dict:
    return query(db_path(tmp_path), "SELECT state, last_reply FROM outbox WHERE id = ?", (outbox_id,))[0]


def suppressions(tmp_path) -> dict:
    return {r["email"]: (r["reason"], r["scope"]) for r in query(db_path(tmp_path), "SELECT * FROM suppressions")}


def test_bounces_and_complaints_reach_their_rows_and_suppress_the_address(herald, tmp_path, capture):
    config = config_for(tmp_path, capture)
    sent = send_three(herald, tmp_path, capture, config)
    hard_id, hard_verp, _ = sent["hard@example.net"]
    angry_id, angry_verp, _ = sent["angry@example.net"]
    full_id, full_verp, _ = sent["full@example.net"]

    result = ingest(herald, config, dsn(hard_verp, "hard@example.net", "5.1.1"), hard_verp)
    assert result.returncode == 0 and b"recorded hard dsn 5.1.1" in result.stdout, result
    assert row(tmp_path, hard_id)["state"] == "bounced" and "User unknown" in row(tmp_path, hard_id)["last_reply"]
    assert suppressions(tmp_path) == {"hard@example.net": ("hard-bounce", "all")}

    # A complaint reaches Herald's abuse address, not the VERP one: the row is found inside the quoted original.
    result = ingest(herald, config, arf(angry_verp, "angry@example.net"))
    assert result.returncode == 0 and b"complaint" in result.stdout, result
    assert row(tmp_path, angry_id)["state"] == "complained"
    assert suppressions(tmp_path)["angry@example.net"] == ("complaint", "all")

    # Soft bounces: the row is marked; the address is suppressed at the second soft-bounced *message*
    # (softLimit 2) — the same report delivered twice counts once.
    soft = dsn(full_verp, "full@example.net", "4.2.2", diagnostic="smtp; 452 4.2.2 Mailbox full")
    assert ingest(herald, config, soft, full_verp).returncode == 0
    assert ingest(herald, config, soft, full_verp).returncode == 0
    assert row(tmp_path, full_id)["state"] == "bounced" and "full@example.net" not in suppressions(tmp_path)
    again = herald.send("verify-email", "full@example.net", "--continue-url", "https://app.example.com/done", config=config)
    herald.worker_until_empty(config)
    again_verp = [m["mail_from"] for m in capture.messages() if m["rcpt_tos"] == ["full@example.net"]][-1]
    assert VERP.match(again_verp) and int(VERP.match(again_verp).group(1)) == again
    soft = dsn(again_verp, "full@example.net", "5.2.2", diagnostic="smtp; 552 5.2.2 Mailbox full")
    assert ingest(herald, config, soft, again_verp).returncode == 0
    assert suppressions(tmp_path)["full@example.net"] == ("soft-bounce", "all")
    lapses = query(db_path(tmp_path), "SELECT expires_at - created_at AS span FROM suppressions WHERE email = 'full@example.net'")
    assert lapses[0]["span"] == 7 * 86_400_000, "a soft-bounce suppression lapses after bounces.softWindow"

    kinds = [(r["outbox_id"], r["kind"], r["status"]) for r in
             query(db_path(tmp_path), "SELECT outbox_id, kind, status FROM mail_feedback ORDER BY id")]
    assert kinds == [(hard_id, "hard", "5.1.1"), (angry_id, "complaint", None), (full_id, "soft", "4.2.2"),
                     (full_id, "soft", "4.2.2"), (again, "soft", "5.2.2")], kinds

    rows = {m["id"]: m for m in herald.messages(config)}
    listed = {id: m["state"] for id, m in rows.items()}
    assert listed[again] == "bounced"
    assert (listed[hard_id], listed[angry_id], listed[full_id]) == ("bounced", "complained", "bounced"), listed
    # `herald messages` shows when the bounce or complaint came, and its diagnostic as the last reply.
    assert rows[hard_id]["feedbackAt"] and rows[hard_id]["feedbackAt"] >= rows[hard_id]["sentAt"], rows[hard_id]
    assert "User unknown" in rows[hard_id]["lastReply"] and rows[angry_id]["feedbackAt"], rows
    table = herald("messages", config=config).stdout.splitlines()
    assert "BOUNCED/COMPLAINED" in table[0], table[0]
    assert any(line.split()[0] == str(hard_id) and line.rstrip().endswith(rows[hard_id]["feedbackAt"]) for line in table), table
    audit = [json.loads(line) for line in herald("audit", "--format", "jsonl", config=config).stdout.splitlines()]
    by_id = {r["id"]: r for r in audit}
    assert by_id[hard_id]["feedback"].startswith("hard 5.1.1") and by_id[hard_id]["feedbackAt"], by_id[hard_id]
    assert by_id[hard_id]["smtpReply"], "the relay's reply at send time stays in the audit"

    # The next send to a hard-bounced address is refused with the reason.
    refused = herald("send", "verify-email", "hard@example.net", "--continue-url", "https://app.example.com/done",
                     config=config, check=False)
    assert refused.returncode == 4 and "RECIPIENT_SUPPRESSED" in refused.stderr, refused.stderr


def test_forged_addresses_auto_replies_and_strangers_change_nothing(herald, tmp_path, capture):
    config = config_for(tmp_path, capture)
    sent = send_three(herald, tmp_path, capture, config)
    outbox_id, verp, _ = sent["hard@example.net"]
    match = VERP.match(verp)
    forged = f"bounces+{int(match.group(1)) + 1}-{match.group(2)}@{DOMAIN}"
    other = f"bounces+{match.group(1)}-{'0' * 16}@{DOMAIN}"

    for message, rcpt in [(dsn(forged, "angry@example.net", "5.1.1"), forged),
                          (dsn(other, "hard@example.net", "5.1.1"), other)]:
        result = ingest(herald, config, message, rcpt)
        assert result.returncode == 0 and b"unmatched" in result.stdout, result
    vacation = (f"From: hard@example.net\r\nTo: {verp}\r\nSubject: Out of office\r\nAuto-Submitted: auto-replied\r\n\r\n"
                "I am away until Monday.\r\n").encode()
    result = ingest(herald, config, vacation, verp)
    assert result.returncode == 0 and b"ignored" in result.stdout, result
    assert {r["state"] for r in query(db_path(tmp_path), "SELECT state FROM outbox")} == {"sent"}
    assert suppressions(tmp_path) == {}
    assert query(db_path(tmp_path), "SELECT COUNT(*) AS n FROM mail_feedback")[0]["n"] == 0


def test_ingest_without_a_bounce_domain_or_mail_key_defers_the_message(herald, tmp_path, capture):
    config = write_config(tmp_path, capture)
    result = ingest(herald, config, b"Subject: x\r\n\r\nbody\r\n", "bounces+1-0123456789abcdef@bounces.test")
    assert result.returncode == 75, result  # EX_TEMPFAIL: the MTA keeps the bounce while the operator fixes this
    lines = [line for line in result.stderr.decode().splitlines() if line.strip()]
    assert len(lines) == 1 and "bounces.domain" in lines[0], lines
    listen = herald("bounces", "listen", config=config, check=False)
    assert listen.returncode == 1 and "bounces.domain" in listen.stderr
    # With the domain but no key yet (nothing was sent), ingest must not make a key of its own.
    config = config_for(tmp_path, capture)
    result = ingest(herald, config, b"Subject: x\r\n\r\nbody\r\n", "bounces+1-0123456789abcdef@bounces.test")
    assert result.returncode == 75 and b"mailKeyFile" in result.stderr, result
    assert not (tmp_path / "mail-key").exists()


def test_the_lmtp_listener_records_each_recipient_and_answers_per_recipient(herald, tmp_path, capture):
    config = config_for(tmp_path, capture)
    sent = send_three(herald, tmp_path, capture, config)
    hard_id, hard_verp, _ = sent["hard@example.net"]
    full_id, full_verp, _ = sent["full@example.net"]
    listener = herald.start("bounces", "listen", config=config, name="listen")
    deadline = time.monotonic() + 30
    port = None
    while port is None and time.monotonic() < deadline:
        found = re.search(r"READY lmtp://127\.0\.0\.1:(\d+)", listener.stdout())
        port = int(found.group(1)) if found else None
        if port is None:
            assert listener.proc.poll() is None, listener.stderr()
            time.sleep(0.05)
    assert port, listener.stderr()

    client = smtplib.LMTP("127.0.0.1", port, timeout=10)
    try:
        client.ehlo_or_helo_if_needed()
        refused = client.sendmail("", [hard_verp, full_verp], dsn(hard_verp, "hard@example.net", "5.1.1"))
        assert refused == {}, refused
    finally:
        client.quit()
    assert row(tmp_path, hard_id)["state"] == "bounced"
    # The same message to the other row's VERP address: recorded against that row too (the envelope decides).
    assert row(tmp_path, full_id)["state"] == "bounced"
    assert suppressions(tmp_path)["hard@example.net"] == ("hard-bounce", "all")
    listener.signal(15)
    assert listener.wait(30) == 0, listener.stderr()

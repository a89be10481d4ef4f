"""The private-Postfix harness (Tests/support/postfix.py) proven end to end, no herald binary needed.

A message with a VERP envelope sender goes into a real Postfix on loopback, which relays it to
a sink that accepts one recipient and rejects the other with 550 5.1.1; Postfix must bounce at
once and send the DSN to the VERP address, which its transport map routes to an LMTP stand-in.
"""

from __future__ import annotations

import os
import smtplib
import time
from email.message import EmailMessage

import pytest

import helpers  # noqa: F401  (puts Tests/support on sys.path)
from postfix import POSTFIX, LMTPReceiver, PostfixError, PostfixInstance, rejecting_sink

pytestmark = pytest.mark.skipif(
    not os.path.isfile(POSTFIX), reason=f"{POSTFIX} is not installed (Debian package `postfix`)")

VERP = "bounces+12-0123456789abcdef@bounces.test"
ACCEPTED = "ok@example.com"
REJECTED = "x@example.com"
REJECTION = f"550 5.1.1 <{REJECTED}>: Recipient address rejected: User unknown"


def _message() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Herald Demo <noreply@herald-demo.example>"
    msg["To"] = f"{ACCEPTED}, {REJECTED}"
    msg["Subject"] = "harness check"
    msg["Message-ID"] = "<harness-check@herald-demo.example>"
    msg.set_content("hello\n")
    return msg.as_bytes()


def _delivery_status_groups(dsn) -> list:
    """The per-recipient header blocks of the message/delivery-status part."""
    parts = [p for p in dsn.walk() if p.get_content_type() == "message/delivery-status"]
    assert len(parts) == 1, f"expected one message/delivery-status part:\n{dsn}"
    return list(parts[0].get_payload())  # [per-message block, per-recipient blocks...]


def test_rejected_recipient_bounces_to_the_verp_address_over_lmtp(tmp_path):
    started = time.monotonic()
    with rejecting_sink({REJECTED: REJECTION}) as sink, LMTPReceiver() as lmtp, \
            PostfixInstance(tmp_path, relay_port=sink.port,
                            transports={"bounces.test": f"lmtp:inet:127.0.0.1:{lmtp.port}"}) as pf:
        try:
            with smtplib.SMTP("127.0.0.1", pf.port, timeout=10) as client:
                refused = client.sendmail(VERP, [ACCEPTED, REJECTED], _message())
            assert refused == {}, "Postfix itself must accept both recipients (it relays for 127.0.0.0/8)"

            dsns = lmtp.wait_for_messages(1, timeout=15)
            pf.wait_until_queue_empty(timeout=15)

            relayed = sink.messages()
            assert [m["rcpt_tos"] for m in relayed] == [[ACCEPTED]]
            assert relayed[0]["mail_from"] == VERP
            assert relayed[0]["message"]["Message-ID"] == "<harness-check@herald-demo.example>"

            assert len(lmtp.messages()) == 1, "exactly one DSN"
            dsn_record = dsns[0]
            assert dsn_record["rcpt_tos"] == [VERP]
            assert dsn_record["mail_from"] in ("", "<>"), "a DSN has the null sender"
            dsn = dsn_record["message"]
            assert dsn.get_content_type() == "multipart/report"
            assert dsn.get_param("report-type") == "delivery-status"
            assert dsn["To"] == VERP

            recipients = [g for g in _delivery_status_groups(dsn) if g["Final-Recipient"]]
            assert [g["Final-Recipient"].split(";")[1].strip() for g in recipients] == [REJECTED]
            group = recipients[0]
            assert group["Action"] == "failed"
            assert group["Status"] == "5.1.1"
            assert "550 5.1.1" in " ".join(str(group["Diagnostic-Code"]).split())

            log = pf.wait_for_log("status=bounced")
            assert f"to=<{REJECTED}>" in log and "dsn=5.1.1" in log
            assert "status=sent" in log
        except BaseException:
            print(f"--- postfix log ({pf.log_file})\n{pf.log()}")
            raise
    assert not pf.running
    assert time.monotonic() - started < 20


def test_an_exception_inside_the_block_stops_the_instance_and_it_can_start_again(tmp_path):
    with rejecting_sink({}) as sink:
        instance = PostfixInstance(tmp_path, relay_port=sink.port)
        with pytest.raises(RuntimeError, match="boom"):
            with instance as pf:
                master = pf.master_pid
                assert pf.running and master
                raise RuntimeError("boom")
        assert not instance.running
        assert not os.path.exists(f"/proc/{master}") or _zombie_or_other(master)

        # The same directories again (a fresh port), then a plain message through it.
        with PostfixInstance(tmp_path, relay_port=sink.port) as pf:
            with smtplib.SMTP("127.0.0.1", pf.port, timeout=10) as client:
                client.sendmail("sender@herald-demo.example", ["someone@example.net"], _message())
            sink.wait_for_messages(1, timeout=15)
            pf.wait_until_queue_empty(timeout=15)
        assert not pf.running
        with pytest.raises(PostfixError):
            pf.command("postfix", "status")  # "the Postfix mail system is not running"


def _zombie_or_other(pid: int) -> bool:
    """A pid that is only a zombie awaiting reaping by init, or was reused by another program."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return True
    return fields[0] == "Z" or b"master" not in cmdline

"""The bounce path end to end: Herald → a real Postfix → a relay that rejects → Postfix's DSN → Herald.

Herald's worker hands three messages to a private Postfix on loopback, which relays them to a sink that
accepts one recipient, rejects one with 550 5.1.1 (a dead mailbox) and one with 552 5.2.2 (a full one).
Postfix generates the delivery status notifications itself and, through its transport map, delivers them to
`herald bounces listen` over LMTP at the VERP address each message left with. The rows must end `bounced`
(hard and soft) and `sent`, the dead address suppressed and the full one not (one soft bounce is under
bounces.softLimit), and the next campaign must reject the dead address at import.
"""

from __future__ import annotations

import csv
import os
import re
import time

import pytest

from helpers import db_path, query, wait_until, write_config, write_recipients
from postfix import POSTFIX, PostfixInstance, rejecting_sink

pytestmark = pytest.mark.skipif(
    not os.path.isfile(POSTFIX), reason=f"{POSTFIX} is not installed (Debian package `postfix`)")

DEAD, FULL, FINE = "dead@example.net", "full@example.net", "fine@example.net"


def listening_port(listener, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"READY lmtp://127\.0\.0\.1:(\d+)", listener.stdout())
        if found:
            return int(found.group(1))
        assert listener.proc.poll() is None, f"herald bounces listen exited:\n{listener.stderr()}"
        time.sleep(0.05)
    pytest.fail(f"herald bounces listen never said READY:\n{listener.stderr()}")


def test_postfix_bounces_reach_their_rows_through_the_lmtp_listener(herald, tmp_path):
    rejections = {DEAD: f"550 5.1.1 <{DEAD}>: Recipient address rejected: User unknown in virtual mailbox table",
                  FULL: f"552 5.2.2 <{FULL}>: Mailbox full"}
    with rejecting_sink(rejections) as sink:
        config = write_config(tmp_path, None, bounces={"domain": "bounces.test", "listenPort": 0, "softLimit": 3})
        listener = herald.start("bounces", "listen", config=config, name="listen")
        port = listening_port(listener)
        with PostfixInstance(tmp_path, relay_port=sink.port,
                             transports={"bounces.test": f"lmtp:inet:127.0.0.1:{port}"}) as postfix:
            try:
                config = write_config(tmp_path, None, smtp={"url": f"smtp://127.0.0.1:{postfix.port}"},
                                      bounces={"domain": "bounces.test", "listenPort": 0, "softLimit": 3})
                recipients = write_recipients(tmp_path, [FINE, DEAD, FULL])
                herald("send", "verify-email", "--recipients", str(recipients), "--continue-url",
                       "https://app.example.com/done", config=config)
                herald.worker_until_empty(config)
                ids = {r["recipient"]: r["id"] for r in query(db_path(tmp_path), "SELECT id, recipient FROM outbox")}

                def states():
                    return {r["recipient"]: r["state"] for r in query(db_path(tmp_path), "SELECT recipient, state FROM outbox")}
                wait_until(lambda: states() == {FINE: "sent", DEAD: "bounced", FULL: "bounced"}, 30,
                           f"both DSNs recorded (states {states()})\n--- postfix log\n{postfix.log_tail()}")
                postfix.wait_until_queue_empty(timeout=15)
            except BaseException:
                print(postfix.log_tail(120))
                print(listener.stderr())
                raise

    assert [m["rcpt_tos"] for m in sink.messages()] == [[FINE]]
    feedback = {r["outbox_id"]: r for r in query(db_path(tmp_path), "SELECT * FROM mail_feedback")}
    assert set(feedback) == {ids[DEAD], ids[FULL]}, feedback
    assert (feedback[ids[DEAD]]["kind"], feedback[ids[DEAD]]["status"]) == ("hard", "5.1.1")
    assert "User unknown" in feedback[ids[DEAD]]["diagnostic"]
    assert (feedback[ids[FULL]]["kind"], feedback[ids[FULL]]["status"]) == ("soft", "5.2.2")
    suppressed = {r["email"]: r["reason"] for r in query(db_path(tmp_path), "SELECT email, reason FROM suppressions")}
    assert suppressed == {DEAD: "hard-bounce"}, suppressed

    campaign = tmp_path / "next.csv"
    campaign.write_text(f"email\n{FINE}\n{DEAD}\n{FULL}\n", encoding="utf-8")
    herald("campaign", "create", "next", "--action", "verify-email", "--recipients", str(campaign),
           "--continue-url", "https://app.example.com/done", config=config)
    with open(f"{campaign}.rejects.csv", encoding="utf-8") as handle:
        rejects = list(csv.DictReader(handle))
    assert [(r["content"], r["reason"]) for r in rejects] == [(DEAD, "RECIPIENT_SUPPRESSED (hard-bounce)")], rejects

    listener.signal(15)
    assert listener.wait(30) == 0, listener.stderr()

"""Sending campaign mail fairly: the per-campaign rate and the global cap show in the
arrival times, transactional mail goes first, and campaign mail carries List-Unsubscribe."""

from __future__ import annotations

import re
import time

import pytest

from helpers import wait_until
from campaign_support import (
    UNSUBSCRIBE_MAILTO, UNSUBSCRIBE_URL, addresses, campaign_config, campaign_from_csv, max_in_window,
    recipients_in_order, start_worker,
)


@pytest.mark.parametrize("rate, count, gap", [("4/s", 12, 0.25), ("120/m", 6, 0.5)])
def test_campaign_rate_spaces_the_sends(herald, capture, tmp_path, rate, count, gap):
    config = campaign_config(tmp_path, capture)
    # Starting a moment from now, the worker is up before the first row is due: what is measured is
    # the schedule's spacing, not a catch-up after a slow start (rows already due go out at once).
    campaign_from_csv(herald, config, tmp_path, "paced", addresses("paced", count), "--rate", rate, "--start-at", "+2s")
    herald.worker_until_empty(config, timeout=60)

    times = sorted(m["received_at"] for m in capture.messages())
    assert len(times) == count
    span, nominal = times[-1] - times[0], (count - 1) * gap
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
    assert span >= 0.9 * nominal, f"{count} sends at {rate} span {span:.2f}s, expected >= {0.9 * nominal:.2f}s; gaps {gaps}"
    assert span <= 2 * nominal + 1, f"{count} sends at {rate} took {span:.2f}s, far slower than the rate; gaps {gaps}"
    burst = max_in_window(times, 2 * gap)
    assert burst <= 3, f"{burst} messages within {2 * gap}s at {rate}; gaps {gaps}"


def test_global_max_rate_caps_transactional_and_campaign_mail_together(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture, worker={"maxRate": 5})
    singles = tmp_path / "singles.txt"  # `herald send --recipients`: one address a line, no header
    singles.write_text("\n".join(addresses("single", 8)) + "\n", encoding="utf-8")
    herald("send", "verify-email", "--recipients", str(singles), config=config)
    campaign_from_csv(herald, config, tmp_path, "unpaced", addresses("bulk", 4))  # no campaign rate
    herald.worker_until_empty(config, timeout=60)

    times = sorted(m["received_at"] for m in capture.messages())
    assert len(times) == 12
    span = times[-1] - times[0]
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
    assert span >= 0.9 * 11 * 0.2, f"12 messages under maxRate 5/s span only {span:.2f}s; gaps {gaps}"
    assert max_in_window(times, 0.4) <= 3, f"bursts above maxRate 5/s; gaps {gaps}"


def test_queued_transactional_mail_is_claimed_before_campaign_mail(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture, worker={"batchSize": 5})
    campaign_from_csv(herald, config, tmp_path, "bulk", addresses("bulk", 30))
    herald.send("reset-password", "urgent@x.test", config=config)  # queued after all 30
    herald.worker_until_empty(config, timeout=60)

    order = recipients_in_order(capture)
    assert len(order) == 31
    position = order.index("urgent@x.test")
    assert position < 5, f"the reset email was message #{position + 1} of 31; it must be in the first claimed batch of 5"


def test_transactional_mail_overtakes_a_throttled_campaign_in_flight(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture)
    campaign_from_csv(herald, config, tmp_path, "slow", addresses("slow", 40), "--rate", "10/s")  # ~4 s
    worker = start_worker(herald, config, "--until-empty")
    wait_until(lambda: capture.received_count >= 5, 20, "the campaign to start sending")

    asked = time.time()
    herald.send("reset-password", "urgent@x.test", config=config)
    wait_until(lambda: "urgent@x.test" in recipients_in_order(capture), 10, "the reset email")
    worker.wait(60)
    messages = capture.messages()
    [urgent] = [m for m in messages if m["rcpt_tos"] == ["urgent@x.test"]]
    delay = urgent["received_at"] - asked
    behind = sum(1 for m in messages if m["received_at"] > urgent["received_at"])
    assert delay < 2.0, f"the reset email took {delay:.2f}s behind a throttled campaign"
    assert behind >= 10, f"only {behind} campaign messages were still waiting when the reset email went out"
    assert worker.proc.returncode == 0


def _unsubscribe_targets(message) -> list:
    values = message.get_all("List-Unsubscribe") or []
    assert len(values) <= 1, f"List-Unsubscribe appears {len(values)} times"
    return re.findall(r"<([^<>]*)>", str(values[0])) if values else []


def test_campaign_mail_carries_list_unsubscribe_and_transactional_mail_does_not(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture)
    campaign_from_csv(herald, config, tmp_path, "news", ["first@x.test", "second@x.test"])
    herald.send("verify-email", "single@x.test", config=config)
    herald.worker_until_empty(config)

    mails = {m["rcpt_tos"][0]: m["message"] for m in capture.messages()}
    assert set(mails) == {"first@x.test", "second@x.test", "single@x.test"}
    https_targets = []
    for rcpt in ("first@x.test", "second@x.test"):
        targets = _unsubscribe_targets(mails[rcpt])
        mailto = [t for t in targets if t.startswith("mailto:")]
        https = [t for t in targets if t.startswith("https://")]
        assert len(targets) == 2 and len(mailto) == 1 and len(https) == 1, \
            f"{rcpt}: List-Unsubscribe must hold one <mailto:…> and one <https://…>: {targets}"
        assert mailto[0].split("?")[0] == f"mailto:{UNSUBSCRIBE_MAILTO}", mailto
        assert https[0].startswith(UNSUBSCRIBE_URL), f"{https[0]} is not under {UNSUBSCRIBE_URL}"
        assert str(mails[rcpt]["List-Unsubscribe-Post"]).strip() == "List-Unsubscribe=One-Click"
        https_targets.append(https[0])
    assert https_targets[0] != https_targets[1], \
        "the one-click https link must tell recipients apart (a POST to it carries no address)"

    single = mails["single@x.test"]
    assert single["List-Unsubscribe"] is None and single["List-Unsubscribe-Post"] is None, \
        "single transactional emails must not carry List-Unsubscribe headers"


@pytest.mark.parametrize("mailto, url, expected", [
    ("", "", []),
    (UNSUBSCRIBE_MAILTO, "", ["mailto"]),
    ("", UNSUBSCRIBE_URL, ["https"]),
], ids=["neither", "mailto only", "https only"])
def test_list_unsubscribe_lists_only_what_is_configured(herald, capture, tmp_path, mailto, url, expected):
    config = campaign_config(tmp_path, capture, campaigns={"unsubscribeMailto": mailto, "unsubscribeUrl": url})
    campaign_from_csv(herald, config, tmp_path, "partial", ["only@x.test"])
    herald.worker_until_empty(config)
    [mail] = [m["message"] for m in capture.messages()]

    targets = _unsubscribe_targets(mail)
    assert [t.split(":", 1)[0] for t in targets] == expected, targets
    post = mail["List-Unsubscribe-Post"]
    if "https" in expected:
        assert str(post).strip() == "List-Unsubscribe=One-Click"
    else:  # RFC 8058: one-click needs an https target
        assert post is None, f"List-Unsubscribe-Post without an https target: {post}"

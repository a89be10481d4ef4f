"""`herald worker`'s metrics listener (`worker.metricsPort`, #14 part 1): a real worker sends to
the capture server while its `/metrics` is scraped and parsed with prometheus_client's parser;
the send counters, latency histograms, queue depth and campaign progress must follow the mail.
Also the worker's `log.format: json`: one object per line, the keys of `herald serve`'s, no code or link.
"""

from __future__ import annotations

import re
import signal

import requests
from prometheus_client.parser import text_string_to_metric_families

from exposition import PROCESS_METRICS, assert_described
from exposition import scrape as scrape_exposition
from helpers import action_link, json_log_records, parse_link, wait_until, write_config
from postfix import free_port

TIMEOUT = 20


def scrape(port: int) -> dict:
    """{(sample name, frozenset of labels): value}, or {} while the listener is not up yet."""
    try:
        resp = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    except requests.ConnectionError:
        return {}
    assert resp.status_code == 200, resp.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(resp.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def test_worker_metrics_follow_the_mail_it_sends(herald, capture, tmp_path):
    port = free_port()
    config = write_config(tmp_path, capture, worker={"pollInterval": "50ms", "metricsPort": port},
                          server={"metricsGaugeInterval": "0s"})
    for i in range(3):
        herald.send("verify-email", f"single{i}@x.test", config=config)
    csv = tmp_path / "recipients.csv"
    csv.write_text("email\n" + "".join(f"bulk{i}@x.test\n" for i in range(4)), encoding="utf-8")
    created = herald("campaign", "create", "metrics", "--action", "verify-email", "--recipients", str(csv), config=config)
    campaign = created.stdout.split("campaign ", 1)[1].split()[0].strip(":,")
    herald("campaign", "pause", campaign, config=config)

    worker = herald.start("worker", config=config, name="worker")
    samples = wait_until(
        # The counter counts a send as the worker finishes it; the gauge reads the ledger once the send is recorded.
        lambda: (s := scrape(port)) and value(s, "herald_sends_total", outcome="sent") == 3
        and value(s, "herald_outbox_messages", state="sent", action="verify-email") == 3 and s,
        timeout=TIMEOUT, what="the three single sends counted and recorded")
    assert len(capture.messages()) == 3
    assert value(samples, "herald_sends_total", outcome="sent", reply_class="2xx") == 3
    assert value(samples, "herald_send_duration_seconds_count", outcome="sent") == 3
    assert value(samples, "herald_claim_to_send_seconds_count") == 3
    # The paused campaign waits in the queue: queue depth and its progress say so.
    assert value(samples, "herald_outbox_messages", state="sent", action="verify-email") == 3
    assert value(samples, "herald_outbox_messages", state="queued", action="verify-email") == 4
    assert value(samples, "herald_campaign_messages", campaign=campaign, state="queued") == 4
    assert value(samples, "herald_campaign_messages", campaign=campaign, state="sent") == 0

    herald("campaign", "resume", campaign, config=config)
    samples = wait_until(
        lambda: (s := scrape(port)) and value(s, "herald_sends_total", outcome="sent") == 7
        and value(s, "herald_outbox_messages", state="sent", action="verify-email") == 7 and s,
        timeout=TIMEOUT, what="the campaign's four sends counted and recorded")
    assert value(samples, "herald_send_duration_seconds_bucket", outcome="sent", le="+Inf") == 7
    assert value(samples, "herald_outbox_messages", state="sent", action="verify-email") == 7
    # Nothing of the campaign is pending any more: it drops out of the progress gauge.
    assert value(samples, "herald_campaign_messages", campaign=campaign) == 0
    # The worker's listener serves metrics only, not the API.
    assert requests.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 404

    worker.signal(signal.SIGTERM)
    assert worker.wait(TIMEOUT) == 0, worker.stderr()
    assert "metrics listening" in worker.stderr()


def test_worker_metrics_have_help_build_info_and_process_figures(herald, capture, tmp_path):
    port = free_port()
    config = write_config(tmp_path, capture, worker={"pollInterval": "50ms", "metricsPort": port},
                          server={"metricsGaugeInterval": "0s"})
    herald.send("verify-email", "help@x.test", config=config)
    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: value(scrape(port), "herald_sends_total", outcome="sent") == 1, timeout=TIMEOUT,
               what="the send counted")
    scraped = scrape_exposition(f"http://127.0.0.1:{port}")

    assert_described(scraped)
    version = herald("--version").stdout.split()[1]
    assert scraped.value("herald_build_info", version=version) == 1
    for name in PROCESS_METRICS:
        assert name in scraped.type, f"{name} missing from the worker's scrape"
    assert scraped.value("process_cpu_seconds_total") > 0
    assert scraped.value("process_resident_memory_bytes") > 1_000_000
    assert 0 < scraped.value("process_open_fds") <= scraped.value("process_max_fds")
    # The worker serves no API: no herald_http_* family.
    assert not [name for name in scraped.type if name.startswith("herald_http_")]

    worker.signal(signal.SIGTERM)
    assert worker.wait(TIMEOUT) == 0, worker.stderr()


def test_no_metrics_listener_without_a_port(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    herald.send("verify-email", "a@x.test", config=config)
    result = herald.worker_until_empty(config)
    assert "metrics listening" not in result.stderr


def test_refusals_count_by_outcome_and_reply_class(herald, start_capture, tmp_path):
    # ok: its first DATA deferred (451), then sent; soft: 451 to RCPT until its two attempts are spent; bad: 550 to RCPT.
    capture = start_capture(script=["1:451:4.3.0 Try again", "rcpt=soft:451:4.2.1 Mailbox busy",
                                    "rcpt=bad:550:5.1.1 No such user"])
    port = free_port()
    config = write_config(tmp_path, capture, server={"metricsGaugeInterval": "0s"},
                          worker={"pollInterval": "50ms", "metricsPort": port, "maxAttempts": 2,
                                  "backoffBase": "1s", "backoffCap": "2s"})
    ids = {name: herald.send("verify-email", f"{name}@x.test", config=config) for name in ("ok", "soft", "bad")}

    worker = herald.start("worker", config=config, name="worker")
    samples = wait_until(
        lambda: (s := scrape(port)) and value(s, "herald_sends_total", outcome="sent") == 1
        and value(s, "herald_sends_total", outcome="dead") == 1 and value(s, "herald_sends_total", outcome="failed") == 1
        and s,
        timeout=TIMEOUT, what="the sent, the failed and the dead message counted")
    assert {name: herald.message(config, i)["state"] for name, i in ids.items()} == {
        "ok": "sent", "soft": "dead", "bad": "failed"}
    assert value(samples, "herald_sends_total", outcome="sent", reply_class="2xx") == 1
    assert value(samples, "herald_sends_total", outcome="deferred", reply_class="4xx") == 2, "ok's 451 and soft's first"
    assert value(samples, "herald_sends_total", outcome="dead", reply_class="4xx") == 1
    assert value(samples, "herald_sends_total", outcome="failed", reply_class="5xx") == 1
    assert value(samples, "herald_sends_total") == 5, "one count per recorded outcome, in its reply class only"
    assert value(samples, "herald_sends_total", reply_class="none") == 0
    assert value(samples, "herald_send_duration_seconds_count", outcome="deferred") == 2
    assert value(samples, "herald_send_duration_seconds_count", outcome="failed") == 1
    assert value(samples, "herald_outbox_messages", state="dead", action="verify-email") == 1
    assert value(samples, "herald_outbox_messages", state="failed", action="verify-email") == 1
    assert len(capture.messages()) == 1

    worker.signal(signal.SIGTERM)
    assert worker.wait(TIMEOUT) == 0, worker.stderr()


def test_json_logs_of_the_worker_have_stable_keys_and_no_code_or_link(herald, start_capture, tmp_path):
    capture = start_capture(script=["1:451:4.3.0 Try again"])  # a deferral too: a warning with the row's metadata
    config = write_config(tmp_path, capture, log={"format": "json", "level": "debug"},
                          worker={"backoffBase": "1s", "backoffCap": "1s"})
    herald.send("reset-password", "ada@x.test", config=config)
    result = herald.worker_until_empty(config)

    records = json_log_records(result.stderr, "herald worker")
    messages = [r["message"] for r in records]
    assert "worker started" in messages and any(m.startswith("worker finished") for m in messages), messages
    # The run's counts are fields of their own, beside the sentence.
    [finished] = [r for r in records if r["message"].startswith("worker finished")]
    assert {k: finished["metadata"][k] for k in ("sent", "deferred", "failed", "dead", "possiblyDelivered")} == {
        "sent": "1", "deferred": "1", "failed": "0", "dead": "0", "possiblyDelivered": "0"}, finished
    assert {"released", "returned", "connections", "seconds", "rate"} <= set(finished["metadata"]), finished
    assert any(r["level"] == "warning" and r["metadata"].get("reply", "").startswith("451") for r in records), records
    assert any(r["level"] == "debug" for r in records), "log.level debug is honoured"
    [mail] = capture.messages()
    link = action_link(mail["message"])
    code = parse_link(link)["params"]["oobCode"]
    for secret in (code, link, "oobCode"):
        assert secret not in result.stderr

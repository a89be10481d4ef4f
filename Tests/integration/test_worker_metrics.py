"""`herald worker`'s metrics listener (`worker.metricsPort`, #14 part 1): a real worker sends to
the capture server while its `/metrics` is scraped and parsed with prometheus_client's parser;
the send counters, latency histograms, queue depth and campaign progress must follow the mail.
"""

from __future__ import annotations

import signal

import requests
from prometheus_client.parser import text_string_to_metric_families

from helpers import wait_until, write_config
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
    config = write_config(tmp_path, capture, worker={"pollInterval": "50ms", "metricsPort": port})
    for i in range(3):
        herald.send("verify-email", f"single{i}@x.test", config=config)
    csv = tmp_path / "recipients.csv"
    csv.write_text("email\n" + "".join(f"bulk{i}@x.test\n" for i in range(4)), encoding="utf-8")
    created = herald("campaign", "create", "metrics", "--action", "verify-email", "--recipients", str(csv), config=config)
    campaign = created.stdout.split("campaign ", 1)[1].split()[0].strip(":,")
    herald("campaign", "pause", campaign, config=config)

    worker = herald.start("worker", config=config, name="worker")
    samples = wait_until(
        lambda: (s := scrape(port)) and value(s, "herald_sends_total", outcome="sent") == 3 and s,
        timeout=TIMEOUT, what="the three single sends counted")
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
        lambda: (s := scrape(port)) and value(s, "herald_sends_total", outcome="sent") == 7 and s,
        timeout=TIMEOUT, what="the campaign's four sends counted")
    assert value(samples, "herald_send_duration_seconds_bucket", outcome="sent", le="+Inf") == 7
    assert value(samples, "herald_outbox_messages", state="sent", action="verify-email") == 7
    # Nothing of the campaign is pending any more: it drops out of the progress gauge.
    assert value(samples, "herald_campaign_messages", campaign=campaign) == 0
    # The worker's listener serves metrics only, not the API.
    assert requests.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 404

    worker.signal(signal.SIGTERM)
    assert worker.wait(TIMEOUT) == 0, worker.stderr()
    assert "metrics listening" in worker.stderr()


def test_no_metrics_listener_without_a_port(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    herald.send("verify-email", "a@x.test", config=config)
    result = herald.worker_until_empty(config)
    assert "metrics listening" not in result.stderr

"""`GET /metrics` of `herald serve` and `log.format: json` (#14, part 1).

Every scrape is parsed with prometheus_client's own text parser, and every number is
checked to move with real traffic: mail through the embedded worker to the capture
server, API calls over loopback, codes redeemed and refused.
"""

from __future__ import annotations

import time


import requests
from prometheus_client.parser import text_string_to_metric_families

from helpers import action_link, json_log_records, wait_until
from http_support import HTTP_TIMEOUT, code_of, error_code, ok, unique_email

PASSWORD = "correct horse battery"
NEW_PASSWORD = "another horse battery"
METRICS_TOKEN = "metrics-token-0123456789abcdef"
SEND_OOB = "/v1/accounts:sendOobCode"
RESET = "/v1/accounts:resetPassword"


# --------------------------------------------------------------------------- scraping
def scrape(url: str, token: str | None = None) -> dict:
    """{(sample name, frozenset of labels): value} from one scrape, through prometheus_client's parser."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    resp = requests.get(url + "/metrics", headers=headers, timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4"), resp.headers
    samples = {}
    for family in text_string_to_metric_families(resp.text):
        assert family.name.startswith(("herald_", "process_")), family.name
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 if none)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def delta(before: dict, after: dict, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def reset_code_for(srv, email: str) -> str:
    srv.sign_up(email, PASSWORD)
    return srv.oob("PASSWORD_RESET", email)["oobCode"]


# --------------------------------------------------------------------------- metrics
def test_sends_api_requests_and_latencies_move_with_real_mail(server):
    srv = server(server={"metricsGaugeInterval": "0s"})
    emails = [unique_email(f"metrics-send{i}") for i in range(3)]
    for email in emails:
        srv.sign_up(email, PASSWORD)
    before = scrape(srv.url)
    for email in emails:
        ok(srv.send_oob("PASSWORD_RESET", email))
    for email in emails:
        srv.mail_to(email)
    after = wait_until(
        lambda: (s := scrape(srv.url)) and delta(before, s, "herald_sends_total", outcome="sent") == 3 and s,
        timeout=20, what="three sends counted")

    assert delta(before, after, "herald_sends_total", outcome="sent", reply_class="2xx") == 3
    assert delta(before, after, "herald_sends_total", outcome="failed") == 0
    assert delta(before, after, "herald_send_duration_seconds_count", outcome="sent") == 3
    assert delta(before, after, "herald_send_duration_seconds_bucket", outcome="sent", le="+Inf") == 3
    assert delta(before, after, "herald_send_duration_seconds_sum", outcome="sent") > 0
    assert delta(before, after, "herald_claim_to_send_seconds_count") == 3
    # The queue depth is read from the ledger at the scrape: all three are sent, none waits.
    assert value(after, "herald_outbox_messages", state="sent", action="reset-password") == 3
    assert value(after, "herald_outbox_messages", state="queued") == 0
    # API requests by route, method and status, each with a latency observation.
    assert delta(before, after, "herald_http_requests_total", route=SEND_OOB, method="POST", status="200") == 3
    assert delta(before, after, "herald_http_request_duration_seconds_count", route=SEND_OOB, method="POST", status="200") == 3
    assert delta(before, after, "herald_http_request_duration_seconds_bucket", route=SEND_OOB, method="POST", status="200",
                 le="+Inf") == 3


def test_redemptions_and_refused_codes_are_counted_by_outcome_and_status(server):
    srv = server()
    code = reset_code_for(srv, unique_email("metrics-redeem"))
    before = scrape(srv.url)

    bogus = srv.post("accounts:resetPassword", {"oobCode": "not-a-real-code", "newPassword": NEW_PASSWORD})
    assert bogus.status_code == 400
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    again = srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD})
    assert again.status_code == 400
    after = scrape(srv.url)

    assert delta(before, after, "herald_redemptions_total", outcome="redeemed") == 1
    refusals = {error_code(bogus), error_code(again)}
    assert delta(before, after, "herald_redemptions_total") == 3
    for outcome in refusals:  # labelled with the error the API answered
        expected = [error_code(bogus), error_code(again)].count(outcome)
        assert delta(before, after, "herald_redemptions_total", outcome=outcome) == expected, outcome
    assert delta(before, after, "herald_http_requests_total", route=RESET, method="POST", status="400") == 2
    assert delta(before, after, "herald_http_requests_total", route=RESET, method="POST", status="200") == 1


def test_queue_depth_follows_queued_rows_and_unrouted_requests_are_counted(server):
    srv = server("--no-worker", server={"metricsGaugeInterval": "0s"})
    emails = [unique_email(f"metrics-queue{i}") for i in range(2)]
    for email in emails:
        srv.sign_up(email, PASSWORD)
    before = scrape(srv.url)
    assert value(before, "herald_outbox_messages", state="queued", action="reset-password") == 0
    for email in emails:
        ok(srv.send_oob("PASSWORD_RESET", email))
    missing = requests.get(srv.url + "/no/such/page", timeout=HTTP_TIMEOUT)
    assert missing.status_code == 404
    after = scrape(srv.url)

    assert value(after, "herald_outbox_messages", state="queued", action="reset-password") == 2
    assert value(after, "herald_outbox_messages", state="sent") == 0
    # Every state and action is there, zeros included, so no series comes and goes.
    states = {dict(labels)["state"] for (name, labels) in after if name == "herald_outbox_messages"}
    assert {"queued", "sending", "sent", "deferred", "failed", "dead", "expired", "cancelled"} <= states
    # Unrouted paths share one label value: a scanner cannot grow the series.
    assert delta(before, after, "herald_http_requests_total", route="NotFound", method="GET", status="404") == 1
    assert not any("no/such" in str(labels) for (_, labels) in after)


def test_throttled_requests_are_counted_by_limit(server):
    srv = server(limits={"ipSendsPerMinute": 1, "ipBurst": 1})
    email = unique_email("metrics-throttle")
    before = scrape(srv.url)
    ok(srv.send_oob("PASSWORD_RESET", email))
    refused = srv.send_oob("PASSWORD_RESET", email)
    assert refused.status_code == 400 and error_code(refused).startswith("TOO_MANY_ATTEMPTS"), refused.text
    after = scrape(srv.url)
    assert delta(before, after, "herald_throttled_requests_total", limit="ip") == 1
    assert delta(before, after, "herald_http_requests_total", route=SEND_OOB, status="400") == 1


def test_metrics_token_guards_the_scrape(server):
    srv = server(server={"metricsToken": METRICS_TOKEN})
    assert requests.get(srv.url + "/metrics", timeout=HTTP_TIMEOUT).status_code == 401
    wrong = requests.get(srv.url + "/metrics", headers={"Authorization": "Bearer nope"}, timeout=HTTP_TIMEOUT)
    assert wrong.status_code == 401
    samples = scrape(srv.url, token=METRICS_TOKEN)
    assert value(samples, "herald_outbox_messages") == 0


# --------------------------------------------------------------------------- logs


def test_json_logs_are_one_object_per_line_with_stable_keys_and_no_secrets(server):
    srv = server(log={"format": "json"})
    email = unique_email("metrics-json")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    link = action_link(srv.mail_to(email)[0]["message"])
    code = code_of(link)
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    assert srv.stop() == 0

    stderr = srv.stderr_text()
    records = json_log_records(stderr, "herald serve")
    assert any(r["message"].startswith("worker finished") for r in records), stderr
    for secret in (code, link, PASSWORD, NEW_PASSWORD, srv.settings["server"]["adminToken"]):
        assert secret not in stderr


def test_the_outbox_gauges_are_counted_once_per_interval_however_often_they_are_scraped(server):
    """Counting the outbox reads the whole table: scrapes within `server.metricsGaugeInterval` of the last count
    answer with the gauges as they are, so many scrapers cost one count per interval."""
    srv = server("--no-worker", server={"metricsGaugeInterval": "2s"})
    email = unique_email("metrics-interval")
    srv.sign_up(email, PASSWORD)
    assert value(scrape(srv.url), "herald_outbox_messages", state="queued", action="reset-password") == 0
    ok(srv.send_oob("PASSWORD_RESET", email))
    assert value(scrape(srv.url), "herald_outbox_messages", state="queued", action="reset-password") == 0, \
        "counted again within the interval"
    time.sleep(2.2)
    assert value(scrape(srv.url), "herald_outbox_messages", state="queued", action="reset-password") == 1

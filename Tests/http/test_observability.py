"""What an operator's Prometheus, Grafana and log pipeline get from `herald serve` (#42, item 6).

* `/metrics`: every family with a HELP line, the catalogue's (Sources/HeraldMetrics/MetricCatalogue.swift);
  `herald_build_info{version}` naming what `herald --version` prints; the `process_*` figures, checked against
  the process's own /proc entries.
* The shipped Grafana dashboard (docs/operations/grafana-dashboard.json): every metric its PromQL names is in a
  scrape of a server that has done each thing once (a send, a throttle, a redemption, a webhook, a campaign).
* `server.accessLog`: one JSON line per request with method, path, status, duration_ms and client, never a query
  string, a body or a credential; none without the key.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import requests

from exposition import PROCESS_METRICS, assert_described, dashboard, dashboard_metric_names, scrape
from helpers import API_KEY, action_link, herald_env, json_log_records, wait_until
from http_support import ADMIN_TOKEN, HTTP_TIMEOUT, code_of, error_code, ok, unique_email
from webhook_receiver import SECRET, Receiver

PASSWORD = "correct horse battery"
NEW_PASSWORD = "another horse battery"


def proc_status(pid: int) -> dict:
    """/proc/<pid>/status as {field: first number}, in bytes for the kB fields."""
    fields = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                fields[key] = int(parts[0]) * (1024 if parts[-1] == "kB" else 1)
    return fields


def open_file_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits", encoding="ascii") as limits:
        line = next(line for line in limits if line.startswith("Max open files"))
    return int(line.split()[3])


def herald_version(srv) -> str:
    out = subprocess.run([str(srv.binary), "--version"], capture_output=True, text=True, timeout=30, env=herald_env())
    match = re.match(r"herald (\S+) \(ledger schema \d+\)", out.stdout.strip())
    assert match, out.stdout + out.stderr
    return match.group(1)


def test_every_family_has_help_and_build_info_and_process_figures_are_there(server):
    started = time.time()
    srv = server()
    ok(srv.send_oob("PASSWORD_RESET", unique_email("obs-help")))  # an API call: herald_http_* exist
    scraped = scrape(srv.url)

    assert_described(scraped)
    assert scraped.value("herald_build_info", version=herald_version(srv)) == 1
    assert len([n for n, _ in scraped.samples if n == "herald_build_info"]) == 1
    for name in PROCESS_METRICS:
        assert name in scraped.type, f"{name} missing from the scrape"
    assert scraped.type["process_cpu_seconds_total"] == "counter"

    pid = srv.proc.pid
    status = proc_status(pid)
    assert 0 < scraped.value("process_cpu_seconds_total") < (time.time() - started) * os.cpu_count() + 1
    assert 0.5 < scraped.value("process_resident_memory_bytes") / status["VmRSS"] < 2
    assert 0.8 < scraped.value("process_virtual_memory_bytes") / status["VmSize"] < 1.25
    assert abs(scraped.value("process_open_fds") - len(os.listdir(f"/proc/{pid}/fd"))) < 20
    assert scraped.value("process_max_fds") == open_file_limit(pid)
    # From /proc/stat's btime, a whole second: a second or two of slack.
    assert started - 3 <= scraped.value("process_start_time_seconds") <= time.time() + 1

    # The CPU counter grows with work; the start time does not move.
    for _ in range(50):
        requests.get(srv.url + "/health", timeout=HTTP_TIMEOUT)
    later = scrape(srv.url)
    assert later.value("process_cpu_seconds_total") > scraped.value("process_cpu_seconds_total")
    assert later.value("process_start_time_seconds") == scraped.value("process_start_time_seconds")


def test_every_metric_the_dashboard_asks_for_is_in_a_scrape(server, tmp_path):
    board = dashboard()
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    assert {v["name"] for v in board["templating"]["list"]} >= {"datasource", "job", "instance"}
    used = dashboard_metric_names(board)
    for wanted in ("herald_sends_total", "herald_send_duration_seconds_bucket", "herald_outbox_messages",
                   "herald_http_requests_total", "herald_http_request_duration_seconds_bucket",
                   "herald_webhook_posts_total", "herald_throttled_requests_total", "herald_redemptions_total",
                   "process_cpu_seconds_total", "process_resident_memory_bytes", "herald_build_info"):
        assert wanted in used, f"the dashboard has no panel on {wanted}"

    receiver = Receiver(SECRET).start()
    try:
        srv = server(server={"metricsGaugeInterval": "0s"}, limits={"ipSendsPerMinute": 1, "ipBurst": 1},
                     webhooks={"backoffBase": "1s", "backoffCap": "2s", "app": {"url": receiver.url, "secret": SECRET}})
        email = unique_email("obs-dashboard")
        srv.sign_up(email, PASSWORD)
        ok(srv.send_oob("PASSWORD_RESET", email))
        throttled = srv.send_oob("PASSWORD_RESET", email)
        assert error_code(throttled).startswith("TOO_MANY_ATTEMPTS"), throttled.text
        code = code_of(action_link(srv.mail_to(email)[0]["message"]))
        ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
        # A campaign that starts in an hour: its rows wait, so its progress gauge is there.
        recipients = tmp_path / "campaign.csv"
        recipients.write_text(f"email\n{email}\n", encoding="utf-8")
        created = subprocess.run(
            [str(srv.binary), "campaign", "create", "obs-dashboard", "--action", "verify-email", "--recipients",
             str(recipients), "--start-at", "+1h", "--config", str(srv.config)],
            cwd=srv.cwd, env=herald_env(), capture_output=True, text=True, timeout=60)
        assert created.returncode == 0, created.stdout + created.stderr

        scraped = wait_until(
            lambda: (s := scrape(srv.url)) and s.value("herald_sends_total", outcome="sent") == 1
            and s.value("herald_webhook_posts_total", outcome="delivered") >= 1
            and s.value("herald_campaign_messages", state="queued") == 1 and s,
            timeout=20, what="the send, its webhook and the campaign in the scrape")
    finally:
        receiver.stop()

    assert_described(scraped)
    missing = sorted(name for name in used if not scraped.has(name))
    assert not missing, f"the dashboard asks for metrics no scrape has: {missing}"
    assert scraped.value("herald_redemptions_total", outcome="redeemed") == 1
    assert scraped.value("herald_throttled_requests_total", limit="ip") == 1


def test_the_access_log_has_one_line_per_request_and_no_query_body_or_credential(server):
    srv = server(server={"accessLog": True}, log={"format": "json"})
    email = unique_email("obs-access")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    link = action_link(srv.mail_to(email)[0]["message"])
    code = code_of(link)
    page = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert page.status_code == 200
    assert srv.admin_user(email)["email"] == email
    assert requests.get(srv.url + "/no/such/page?token=not-for-the-log", timeout=HTTP_TIMEOUT).status_code == 404
    assert srv.stop() == 0

    stderr = srv.stderr_text()
    records = json_log_records(stderr, "herald serve")
    access = [r for r in records if r["label"] == "herald.access"]
    lines = {(r["metadata"]["method"], r["metadata"]["path"], r["metadata"]["status"]) for r in access}
    assert {("POST", "/v1/accounts:signUp", "200"), ("POST", "/v1/accounts:sendOobCode", "200"),
            ("GET", "/__/auth/action", "200"), ("POST", "/v1/projects/herald-demo/accounts:lookup", "200"),
            ("GET", "/no/such/page", "404")} <= lines, lines
    for record in access:
        metadata = record["metadata"]
        assert record["level"] == "info"
        assert set(metadata) == {"method", "path", "status", "duration_ms", "client"}, metadata
        assert float(metadata["duration_ms"]) >= 0
        assert metadata["client"] == "127.0.0.1"
        assert record["message"].startswith(f'{metadata["method"]} {metadata["path"]} {metadata["status"]} ')
        assert "?" not in metadata["path"] and "?" not in record["message"]
    logged = "\n".join(str(r) for r in access)
    for secret in (code, API_KEY, ADMIN_TOKEN, PASSWORD, "not-for-the-log", "oobCode", "key="):
        assert secret not in logged, secret
    for secret in (code, link, PASSWORD, ADMIN_TOKEN):
        assert secret not in stderr


def test_no_access_log_unless_asked(server):
    srv = server(log={"format": "json"})
    ok(srv.send_oob("PASSWORD_RESET", unique_email("obs-no-access")))
    assert requests.get(srv.url + "/health", timeout=HTTP_TIMEOUT).status_code == 200
    assert srv.stop() == 0
    records = json_log_records(srv.stderr_text(), "herald serve")
    assert not [r for r in records if r["label"] == "herald.access"]

"""A new operator's first hour (issue #39): links that point at Herald's own pages, misconfiguration that says so
(no built-in relay, a relay that refuses the configuration, a mistyped environment variable, a busy port), a worker
that gives up with a reason instead of waiting for ever, `--version`, private files, and `make demo`'s script."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

from helpers import REPO_ROOT, assert_one_error_line, text_links, wait_until, write_config


def closed_port() -> int:
    """A loopback port nothing listens on: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def without(config: Path, section: str, key: str) -> Path:
    """The config file with one key taken out, so its built-in default applies."""
    values = yaml.safe_load(config.read_text())
    del values[section][key]
    config.write_text(yaml.safe_dump(values, sort_keys=False))
    return config


def serve_url(bg) -> str:
    line = wait_until(lambda: next((l for l in bg.stdout().splitlines() if l.startswith("READY ")), None), 30,
                      "herald serve to print READY")
    return line.split()[1]


def test_version_is_answered_by_every_command(herald):
    bare = herald("--version")
    assert bare.stdout.startswith("herald ") and "ledger schema" in bare.stdout, bare.stdout
    for command in (("worker",), ("serve",), ("campaign", "list"), ("messages",)):
        assert herald(*command, "--version").stdout == bare.stdout, command


def test_links_point_at_herald_by_default_and_follow_server_public_url(herald, tmp_path, capture):
    config = without(write_config(tmp_path, capture, server={"port": 9311}), "links", "actionUrl")
    herald.send("verify-email", "ada@example.com", config=config)
    herald.worker_until_empty(config)
    link = text_links(capture.messages()[-1]["message"])[0]
    assert link.startswith("http://127.0.0.1:9311/__/auth/action?") and "mode=verifyEmail" in link, link

    public = write_config(tmp_path, capture, name="public.yaml", server={"publicUrl": "https://auth.example.com/"})
    without(public, "links", "actionUrl")
    herald.send("verify-email", "bob@example.com", config=public)
    herald.worker_until_empty(public)
    link = text_links(capture.messages()[-1]["message"])[0]
    assert link.startswith("https://auth.example.com/__/auth/action?") and "mode=verifyEmail" in link, link


def test_a_sender_without_a_relay_stops_with_one_line(herald, tmp_path):
    config = without(write_config(tmp_path), "smtp", "url")
    # Queueing needs no relay; sending does.
    herald.send("verify-email", "ada@example.com", config=config)
    for command in (("worker", "--until-empty"), ("serve",)):
        result = herald(*command, config=config, check=False, timeout=30)
        assert_one_error_line(result, "smtp.url: not set", "HERALD_SMTP_URL")


def test_a_mistyped_environment_variable_is_named_with_the_nearest_one(herald, tmp_path, capture):
    config = write_config(tmp_path, capture)
    result = herald("messages", config=config, check=False, env={"HERALD_SMTP_TIMOUT": "5s"})
    assert_one_error_line(result, "HERALD_SMTP_TIMOUT", "did you mean HERALD_SMTP_TIMEOUT?")
    # Variables far from every key are other programs' business.
    herald("messages", config=config, env={"HERALD_SOMETHING_ELSE": "x"})


def test_a_busy_port_is_named_with_its_key_host_and_port(herald, tmp_path, capture):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(tmp_path, capture, server={"port": port})
        result = herald("serve", config=config, check=False, timeout=30)
    # The embedded worker, started first, may log its stop; the one error line is the last.
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(errors) == 1 and result.stderr.splitlines()[-1] == errors[0], result.stderr
    assert f"server.port: cannot listen on 127.0.0.1:{port}" in errors[0] and "already in use" in errors[0], errors[0]
    assert "errno" not in result.stderr and "bind(" not in result.stderr, result.stderr


def test_until_empty_gives_up_after_max_wait_naming_the_refused_relay(herald, tmp_path):
    config = write_config(tmp_path, smtp={"url": f"smtp://127.0.0.1:{closed_port()}"},
                          worker={"connectionBackoffBase": "200ms", "connectionBackoffCap": "1s"})
    herald.send("verify-email", "ada@example.com", config=config)
    started = time.monotonic()
    result = herald("worker", "--until-empty", "--max-wait", "3s", config=config, check=False, timeout=60)
    took = time.monotonic() - started
    assert result.returncode == 1 and 3 <= took < 20, (result.returncode, took)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert "gave up after --max-wait 3s" in errors[0] and "1 message(s) still queued" in errors[0], errors[0]
    assert "the SMTP relay fails" in errors[0], errors[0]
    # Nothing is lost: the message is still queued for the next run.
    assert [m["state"] for m in herald.messages(config)] in (["queued"], ["deferred"])


def test_a_relay_refusing_the_configuration_is_called_a_configuration_problem(herald, tmp_path, capture):
    # The capture server offers no STARTTLS; the configuration requires it.
    config = write_config(tmp_path, capture, smtp={"requireStartTLS": True},
                          worker={"connectionBackoffBase": "200ms", "connectionBackoffCap": "1s"})
    herald.send("verify-email", "ada@example.com", config=config)
    result = herald("worker", "--until-empty", "--max-wait", "2s", config=config, check=False, timeout=60)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr
    assert "STARTTLS" in errors[0] and "refuses Herald's configuration" in errors[0], errors[0]
    assert "the SMTP relay refuses Herald's configuration" in result.stderr  # logged as an error while it retries
    assert capture.messages() == []


def test_health_reports_a_failing_relay_beside_an_ok_status(herald, tmp_path):
    config = write_config(tmp_path, smtp={"url": f"smtp://127.0.0.1:{closed_port()}"}, server={"port": 0},
                          worker={"pollInterval": "100ms", "connectionBackoffBase": "200ms", "connectionBackoffCap": "1s"})
    bg = herald.start("serve", config=config)
    url = serve_url(bg)
    with urllib.request.urlopen(f"{url}/health", timeout=10) as reply:
        assert json.loads(reply.read()) == {"status": "ok"}
    herald.send("verify-email", "ada@example.com", config=config)

    def relay_reported():
        with urllib.request.urlopen(f"{url}/health", timeout=10) as reply:
            body = json.loads(reply.read())
            return body if "relay" in body else None

    body = wait_until(relay_reported, 30, "/health to report the relay")
    assert body["status"] == "ok" and "since" in body["relay"], body


def test_files_herald_creates_are_private(herald, tmp_path, capture):
    ledger = tmp_path / "private" / "ledger.sqlite"
    config = write_config(tmp_path, capture, database={"path": str(ledger)}, server={"port": 0},
                          bounces={"domain": "bounces.herald-demo.example"})
    bg = herald.start("serve", config=config)
    serve_url(bg)
    herald.send("verify-email", "ada@example.com", config=config)
    wait_until(lambda: capture.messages(), 30, "the message to be sent")
    created = [ledger.parent, ledger, *ledger.parent.glob("ledger.sqlite-*"), *ledger.parent.glob("*.json"),
               ledger.parent / "mail-key"]
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in created if path.exists()}
    assert modes[ledger.parent.name] == 0o700 and modes[ledger.name] == 0o600, modes
    assert any(name.endswith("-wal") for name in modes) and any(name.endswith(".json") for name in modes), modes
    assert all(mode == 0o600 for name, mode in modes.items() if name != ledger.parent.name), modes


def test_the_demo_shows_the_whole_job(herald_bin):
    """`make demo`'s script, as `make demo` runs it after its build: one message of each action, a link followed
    through Herald's own page, and the audit of it."""
    result = subprocess.run(["scripts/demo.sh"], cwd=REPO_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=180, env={k: v for k, v in os.environ.items() if not k.startswith("HERALD_")})
    print(result.stdout, result.stderr)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "four messages delivered" in out and "the address is verified" in out, out
    assert "the link in the mail: http://127.0.0.1:" in out, out
    audit = out.split("herald audit --email ada@example.com):", 1)[1].strip().splitlines()
    header = audit[0].split("  ")
    rows = [dict(zip(header, line.split("  "))) for line in audit[1:5]]
    verify = [row for row in rows if row["ACTION"] == "verify-email"]
    assert len(rows) == 4 and all(row["STATE"] == "sent" for row in rows), audit
    assert verify[0]["FIRST CLICK"] != "-" and verify[0]["REDEEMED"] != "-", audit
    assert "/admin" in out and "one-time admin token" in out, out


def test_check_reports_each_part_and_passes_a_working_set_up(herald, tmp_path, capture):
    config = write_config(tmp_path, capture)
    result = herald("check", config=config)
    lines = result.stdout.splitlines()
    assert any(line.startswith("ok") and "ledger" in line and "schema" in line for line in lines), lines
    relay = [line for line in lines if line.split()[1:2] == ["relay"]]
    assert len(relay) == 1 and relay[0].startswith("ok") and "accepted MAIL FROM" in relay[0], lines
    # Nothing was sent: MAIL FROM was taken back with RSET.
    assert capture.messages() == []


def test_check_fails_naming_a_relay_that_refuses_the_configuration_and_a_shared_ledger(herald, tmp_path, capture):
    config = write_config(tmp_path, capture, smtp={"requireStartTLS": True})
    herald("migrate", config=config)
    (tmp_path / "herald.sqlite").chmod(0o644)
    result = herald("check", config=config, check=False)
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    relay = [line for line in lines if line.split()[1:2] == ["relay"]]
    assert relay[0].startswith("error") and "STARTTLS" in relay[0] and "refuses Herald's configuration" in relay[0], lines
    assert any(line.startswith("warn") and "chmod 600" in line for line in lines), lines

    refused = write_config(tmp_path, name="refused.yaml", smtp={"url": f"smtp://127.0.0.1:{closed_port()}"})
    result = herald("check", config=refused, check=False)
    assert result.returncode == 1 and any(line.startswith("error") and "relay" in line for line in result.stdout.splitlines())


def watch_lines(herald, config, campaign: str, seconds: float) -> list:
    """What `herald campaign watch` prints (not on a terminal: one line per interval) within `seconds`."""
    argv = herald.argv(("campaign", "watch", campaign, "--interval", "0.3"), config)
    proc = subprocess.Popen(argv, cwd=herald.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={k: v for k, v in os.environ.items() if not k.startswith("HERALD_")})
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out.splitlines()


def test_campaign_watch_says_why_nothing_moves(herald, tmp_path):
    config = write_config(tmp_path, smtp={"url": f"smtp://127.0.0.1:{closed_port()}"},
                          worker={"pollInterval": "100ms", "heartbeatTimeout": "3s", "connectionBackoffBase": "200ms",
                                  "connectionBackoffCap": "1s"})
    recipients = tmp_path / "recipients.csv"
    recipients.write_text("email\nada@example.com\nbob@example.com\n")
    created = herald("campaign", "create", "spring", "--action", "verify-email", "--recipients", recipients, config=config)
    campaign = re.search(r"\d+", created.stdout).group(0)
    # No worker: the watch says so instead of an unexplained 0.0 msg/s.
    lines = watch_lines(herald, config, campaign, 2)
    assert lines and "no worker is alive" in lines[-1], lines
    # A worker whose relay refuses every connection: the watch names the relay's failure, read from the ledger.
    herald.start("worker", config=config)
    wait_until(lambda: "the SMTP relay fails" in (watch_lines(herald, config, campaign, 1.5) or [""])[-1], 30,
               "campaign watch to name the relay's failure")
    last = watch_lines(herald, config, campaign, 1.5)[-1]
    assert "failed to connect" in last.lower() and "since" in last, last

"""Long work is not silent: `herald worker` and `herald accounts import` show their counts, rate and ETA as a line rewritten on a
terminal, and a line every 10 seconds when their standard error is not one.
"""

from __future__ import annotations

import os
import pty
import subprocess
import time

from helpers import herald_env, json_log_records, write_config, write_recipients


def _run_on_a_terminal(argv: list[str], cwd, *, read_for: float, exit_within: float) -> str:
    """Run `argv` with its standard error on a pseudo-terminal; what it drew there, once it exited 0."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=herald_env(None), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=secondary)
    os.close(secondary)
    output = b""
    deadline = time.monotonic() + read_for
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closed: the process exited
                break
            if not chunk:
                break
            output += chunk
        assert proc.wait(timeout=exit_within) == 0, output.decode("utf-8", "replace")
    finally:
        os.close(primary)
    return output.decode("utf-8", "replace")


def test_worker_logs_progress_every_ten_seconds_off_a_terminal(herald, start_capture, tmp_path):
    capture = start_capture(delay=0.25)
    config = write_config(tmp_path, capture, smtp={"connections": 1})
    recipients = write_recipients(tmp_path, [f"p{n}@example.com" for n in range(50)])
    herald("send", "verify-email", "--recipients", str(recipients), config=config)
    result = herald("worker", "--until-empty", "--concurrency", "1", config=config, timeout=120)
    progress = [line for line in result.stderr.splitlines() if "progress: sent" in line]
    assert progress, result.stderr
    assert all("msg/s" in line and "pending, ETA" in line and "failed" in line for line in progress), progress


def test_worker_draws_a_progress_line_on_a_terminal(herald, herald_bin, start_capture, tmp_path):
    capture = start_capture(delay=0.1)
    config = write_config(tmp_path, capture)
    recipients = write_recipients(tmp_path, [f"t{n}@example.com" for n in range(30)])
    herald("send", "verify-email", "--recipients", str(recipients), config=config)
    text = _run_on_a_terminal([str(herald_bin), "worker", "--until-empty", "--concurrency", "1", "--config", str(config)],
                              tmp_path, read_for=60, exit_within=30)
    assert "\r\x1b[2Ksent " in text and "msg/s" in text and "ETA" in text, text


def _plaintext_users(tmp_path, count: int):
    users = tmp_path / "users.csv"
    users.write_text("email,password\n" + "".join(f"p{n}@example.com,secret-{n:04d}\n" for n in range(count)),
                     encoding="utf-8")
    return users


def test_an_import_draws_rows_rate_and_eta_on_a_terminal(herald_bin, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = _plaintext_users(tmp_path, 130)  # three batches of plaintext passwords (64 each)
    text = _run_on_a_terminal([str(herald_bin), "accounts", "import", str(users), "--config", str(config)],
                              tmp_path, read_for=120, exit_within=60)
    assert "\r\x1b[2K64/130 users, " in text and "/s, ETA " in text, text


def test_an_import_off_a_terminal_prints_progress_lines_and_a_summary(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    result = herald("accounts", "import", str(_plaintext_users(tmp_path, 10)), config=config, timeout=120)
    assert "\x1b" not in result.stderr, result.stderr
    assert "0/10 users, " in result.stderr, result.stderr  # the first line comes at once, then one every 10 s
    assert "imported 10 account(s), rejected 0, skipped 0 already there, in " in result.stdout, result.stdout


def test_an_import_logs_its_progress_as_json_fields_with_log_format_json(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"}, log={"format": "json"})
    result = herald("accounts", "import", str(_plaintext_users(tmp_path, 10)), config=config, timeout=120)
    records = json_log_records(result.stderr, "herald accounts import")  # every line of standard error is JSON
    progress = [r for r in records if r["message"].startswith("progress: ")]
    assert progress, records
    assert progress[0]["message"].startswith("progress: 0/10 users, "), progress[0]
    assert progress[0]["metadata"]["done"] == "0" and progress[0]["metadata"]["total"] == "10", progress[0]
    assert "rate" in progress[0]["metadata"], progress[0]
    assert "imported 10 account(s)" in result.stdout, result.stdout

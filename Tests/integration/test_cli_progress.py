"""Long work is not silent: `herald worker` shows sent, deferred, failed, rate and ETA as a line rewritten on a
terminal, and logs a one-line summary every 10 seconds when its standard error is not one.
"""

from __future__ import annotations

import os
import pty
import subprocess
import time

from helpers import herald_env, write_config, write_recipients


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
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([str(herald_bin), "worker", "--until-empty", "--concurrency", "1", "--config", str(config)],
                            cwd=tmp_path, env=herald_env(None), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=secondary)
    os.close(secondary)
    output = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(primary, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    assert proc.wait(timeout=30) == 0
    os.close(primary)
    text = output.decode("utf-8", "replace")
    assert "\r\x1b[2Ksent " in text and "msg/s" in text and "ETA" in text, text

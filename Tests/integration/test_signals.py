"""A stop signal during start-up ends `herald worker` and `herald serve` gracefully (exit 0), not by the signal.

Both catch SIGTERM and SIGINT as soon as their arguments are parsed, before the configuration and the ledger
are opened, and hand a signal caught then to their service group as a graceful shutdown. What comes before the
first statement - exec and the dynamic loader, some 15-20 ms for a Swift binary - no process can handle, so the
timed tests count their delays from the moment Herald catches the signals (SigCgt in /proc), and the
deterministic one signals Herald while it provably waits in start-up, for a ledger this test keeps locked.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
import yaml

from helpers import db_path, wait_until, write_config

STOP_SIGNALS = [signal.SIGTERM, signal.SIGINT]
CAUGHT = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1))
DELAYS_MS = [0, 5, 10, 20, 50]


def config_for(command: str, tmp_path: Path, capture) -> Path:
    """A config for `command`; `serve` listens on a free port."""
    path = write_config(tmp_path, capture)
    if command == "serve":
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        config["server"] = {"host": "127.0.0.1", "port": 0}
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def proc_status(pid: int, field: str) -> int:
    """A hexadecimal signal mask of /proc/<pid>/status (0 once the process is gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1], 16) for line in lines if line.startswith(f"{field}:")), 0)


def has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def assert_stopped_gracefully(process, command: str, what: str) -> None:
    code = process.wait(timeout=30)
    assert code == 0, f"herald {command} got {what} and exited {code}:\n{process.stderr()}"
    assert "error:" not in process.stderr()


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("command", ["worker", "serve"])
def test_stop_signal_while_start_up_waits_for_the_ledger_exits_0(herald, capture, tmp_path, command, signum):
    config = config_for(command, tmp_path, capture)
    herald("migrate", config=config)
    db = db_path(tmp_path)
    with closing(sqlite3.connect(db, isolation_level=None)) as lock:
        lock.execute("PRAGMA journal_mode = DELETE")  # so that an exclusive lock keeps Herald's open waiting
        lock.execute("BEGIN EXCLUSIVE")
        process = herald.start(command, config=config, name=command)
        wait_until(lambda: has_open(process.pid, db) or process.proc.poll() is not None,
                   timeout=20, what=f"herald {command} to open the ledger", interval=0.001)
        assert process.proc.poll() is None, f"herald {command} exited during start-up:\n{process.stderr()}"
        process.signal(signum)
        lock.execute("ROLLBACK")
    assert_stopped_gracefully(process, command, f"{signal.Signals(signum).name} while opening the ledger")


@pytest.mark.parametrize("attempt", range(3))
@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("delay_ms", DELAYS_MS, ids=[f"{d}ms" for d in DELAYS_MS])
@pytest.mark.parametrize("command", ["worker", "serve"])
def test_stop_signal_at_any_moment_of_start_up_exits_0(herald, capture, tmp_path, command, delay_ms, signum,
                                                       attempt):
    config = config_for(command, tmp_path, capture)
    herald("migrate", config=config)
    process = herald.start(command, config=config, name=command)
    wait_until(lambda: proc_status(process.pid, "SigCgt") & CAUGHT == CAUGHT or process.proc.poll() is not None,
               timeout=20, what=f"herald {command} to catch SIGTERM and SIGINT", interval=0.0001)
    assert process.proc.poll() is None, f"herald {command} exited during start-up:\n{process.stderr()}"
    time.sleep(delay_ms / 1000)
    process.signal(signum)
    assert_stopped_gracefully(process, command, f"{signal.Signals(signum).name} {delay_ms} ms after catching it")

"""Storage faults under a standalone `herald worker`: nothing transient is fatal (issue #9).

A busy, read-only or full ledger is waited out: the worker logs a warning containing
"ledger unavailable" when it starts waiting, an info line containing "ledger available again"
when it recovers, never exits 1 for it, and sends every message exactly once afterwards.

The faults are real: another process holding SQLite's write lock, the ledger's files made
immutable on disk, the ledger's filesystem full. `database.busyTimeout: 1s` keeps the waits short.
Mounting and chattr need root (CI runs as root); where the platform refuses, the test is skipped
with the reason.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from helpers import (
    Immutable, WriteLock, by_recipient, fill_filesystem, free_bytes, immutable_blocks_open_writes,
    integrity_check, mount_tmpfs, unmount, wait_until, write_config,
)

BUSY_TIMEOUT = "1s"
UNAVAILABLE = "ledger unavailable"
RECOVERED = "ledger available again"


def queue_many(herald, config, count: int, prefix: str) -> list:
    recipients = [f"{prefix}{i:02d}@x.test" for i in range(count)]
    for rcpt in recipients:
        herald.send("verify-email", rcpt, config=config)
    return recipients


def assert_logged(stderr: str, needle: str, level: str) -> None:
    """Some stderr line containing `needle` is logged at `level` (swift-log: "<time> <level> herald: …")."""
    lines = [line for line in stderr.splitlines() if needle in line]
    assert lines, f"no {needle!r} on stderr\n{stderr}"
    assert any(f" {level} " in line.lower() for line in lines), f"{needle!r} is not logged at {level}:\n" + "\n".join(lines)


def hold_while_alive(worker, seconds: float) -> None:
    """Sleep `seconds`, failing at once if the worker exits meanwhile."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert worker.proc.poll() is None, (
            f"the worker exited ({worker.proc.returncode}) during a transient ledger fault\n{worker.stderr()}")
        time.sleep(0.05)


def assert_recovers_and_delivers_once(herald, config, db: Path, capture, worker, recipients: list) -> None:
    """The common ending: the still-running worker sends everything exactly once, says it
    recovered, `worker --until-empty` then exits 0, SIGTERM exits 0, the ledger is sound."""
    def all_sent():
        assert worker.proc.poll() is None, f"the worker exited ({worker.proc.returncode})\n{worker.stderr()}"
        return capture.received_count >= len(recipients) and \
            {m["state"] for m in herald.messages(config)} == {"sent"}

    wait_until(all_sent, timeout=30, what=f"all {len(recipients)} messages sent after the fault ended",
               interval=0.2)
    assert_logged(worker.stderr(), UNAVAILABLE, "warning")
    assert_logged(worker.stderr(), RECOVERED, "info")

    received = by_recipient(capture.messages())
    assert sorted(received) == sorted(recipients), "every recipient gets its mail"
    duplicated = {r: len(m) for r, m in received.items() if len(m) != 1}
    assert not duplicated, f"a waited-out fault must not resend: {duplicated}"
    states = {m["recipient"]: m["state"] for m in herald.messages(config)}
    assert states == {r: "sent" for r in recipients}

    herald.worker_until_empty(config, timeout=30)  # check=True: exit 0
    assert worker.proc.poll() is None, f"the worker exited\n{worker.stderr()}"
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0, worker.stderr()
    assert not [l for l in worker.stderr().splitlines() if l.startswith("error: ")], worker.stderr()
    assert integrity_check(db) == ["ok"]


# --------------------------------------------------------------------------- 1. lock
def test_a_write_lock_held_three_busy_timeouts_is_waited_out(herald, start_capture, tmp_path, db):
    capture = start_capture(delay=0.1)
    # Two unrecorded sends per connection: with the default 64 the whole queue could go out during the lock.
    config = write_config(tmp_path, capture, database={"busyTimeout": BUSY_TIMEOUT}, worker={"unrecordedPerConnection": 2})
    recipients = queue_many(herald, config, 20, "lock")

    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.received_count >= 3 or worker.proc.poll() is not None,
               timeout=30, what="3 messages received")
    assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"

    with WriteLock(db):  # BEGIN IMMEDIATE: every write of the worker gets SQLITE_BUSY after 1 s
        hold_while_alive(worker, 4.0)  # 4 x busyTimeout
        assert UNAVAILABLE in worker.stderr(), (
            f"no {UNAVAILABLE!r} warning while the ledger was locked for 4 s\n{worker.stderr()}")
        stalled_at = capture.received_count
    # With its recorder blocked, the worker cannot have sent the whole queue during the lock.
    assert stalled_at < len(recipients), "the lock did not hold the worker up: the test proves nothing"

    assert_recovers_and_delivers_once(herald, config, db, capture, worker, recipients)


# --------------------------------------------------------------------------- 2. read-only
def test_a_read_only_ledger_is_waited_out(herald, start_capture, tmp_path):
    # What SQLite needs to commit in WAL mode: write the -wal (every commit) and the database
    # file (checkpoints), and create files in the directory (a -wal or -journal anew). Root
    # ignores mode bits and a running worker's descriptors were opened read-write before any
    # remount (`mount -o remount,ro` is refused while files are open for writing: "mount point
    # is busy"; a read-only bind mount does not affect descriptors opened through another
    # mount), so the fault is `chattr +i` on the database file, its -wal and its directory: on
    # ext4 writes through the already-open descriptors then fail (EPERM, SQLite's disk I/O
    # error) and new connections open read-only (SQLITE_READONLY). The -shm is left alone: it is
    # SQLite's shared memory (mmap), which SQLite needs even to read, and a write into an
    # immutable mapped page is a SIGBUS, not an error any program could wait out.
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    why_not = immutable_blocks_open_writes(ledger)
    if why_not:
        pytest.skip(f"cannot make the ledger read-only under a running worker here: {why_not}")
    db = ledger / "herald.sqlite"
    wal = db.with_name(db.name + "-wal")

    capture = start_capture(delay=0.1)
    config = write_config(tmp_path, capture, database={"path": str(db), "busyTimeout": BUSY_TIMEOUT},
                          worker={"unrecordedPerConnection": 2})  # else the whole queue may go out during the fault
    recipients = queue_many(herald, config, 20, "ro")

    worker = herald.start("worker", config=config, name="worker")
    wait_until(lambda: capture.received_count >= 3 or worker.proc.poll() is not None,
               timeout=30, what="3 messages received")
    assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"
    assert wal.exists(), "a running worker keeps the WAL open"

    with Immutable([db, wal, ledger]):
        hold_while_alive(worker, 5.0)
        assert UNAVAILABLE in worker.stderr(), (
            f"no {UNAVAILABLE!r} warning while the ledger was read-only for 5 s\n{worker.stderr()}")
        stalled_at = capture.received_count
    assert stalled_at < len(recipients), "the read-only ledger did not hold the worker up"

    assert_recovers_and_delivers_once(herald, config, db, capture, worker, recipients)


# --------------------------------------------------------------------------- 3. full disk
@pytest.fixture
def ledger_tmpfs(tmp_path):
    """An 8 MiB tmpfs at tmp_path/ledger for the database, unmounted at the end. Request it
    before `herald`/`server` so it is torn down after their processes are gone."""
    directory = mount_tmpfs(tmp_path / "ledger", size="8m")
    try:
        yield directory
    finally:
        unmount(directory)


def test_a_full_disk_is_waited_out(ledger_tmpfs, herald, start_capture, tmp_path):
    db = ledger_tmpfs / "herald.sqlite"
    capture = start_capture(delay=0.2)
    config = write_config(tmp_path, capture, database={"path": str(db), "busyTimeout": BUSY_TIMEOUT},
                          worker={"unrecordedPerConnection": 2})  # else the whole queue may go out during the fault
    recipients = queue_many(herald, config, 20, "full")

    worker = herald.start("worker", config=config, name="worker")
    try:
        wait_until(lambda: capture.received_count >= 3 or worker.proc.poll() is not None,
                   timeout=30, what="3 messages received")
        assert worker.proc.poll() is None, f"worker exited early:\n{worker.stderr()}"

        filler = fill_filesystem(ledger_tmpfs)
        try:
            assert free_bytes(ledger_tmpfs) < 64 * 1024, "the ledger's filesystem is not full"
            wait_until(lambda: UNAVAILABLE in worker.stderr() or worker.proc.poll() is not None,
                       timeout=15, what=f"{UNAVAILABLE!r} on a full disk", interval=0.1)
            hold_while_alive(worker, 3.0)
            assert UNAVAILABLE in worker.stderr(), worker.stderr()
            stalled_at = capture.received_count
        finally:
            filler.unlink()
        assert stalled_at < len(recipients), "the full disk did not hold the worker up"

        assert_recovers_and_delivers_once(herald, config, db, capture, worker, recipients)
    finally:
        worker.kill()  # before the fixture unmounts the ledger

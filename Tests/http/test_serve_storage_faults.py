"""Storage faults under `herald serve`: nothing transient is fatal (issue #9).

While the ledger cannot commit (another process holds the write lock, the disk is full) the API
answers Firebase's 503 UNAVAILABLE envelope - never 500 - and stores nothing for that request;
`/health` answers 503 {"status": "unavailable", "error": "ledger…"} while the embedded worker
waits, and {"status": "ok"} again once it commits; the process never exits. A worker failing
for a non-transient reason still ends the process (test_supervision.py).

Also: the WAL does not keep the size of the last burst (periodic checkpoints).
"""

from __future__ import annotations

import time

import pytest

from helpers import (
    WriteLock, fill_filesystem, free_bytes, integrity_check, mount_tmpfs, query, unmount, wal_size,
)
from http_support import assert_unavailable, health, ok, outbox_rows, unique_email

BUSY_TIMEOUT = "1s"
UNAVAILABLE = "ledger unavailable"
RECOVERED = "ledger available again"


def wait_for_health(srv, status_code: int, timeout: float) -> dict:
    """Poll /health until it answers `status_code` (failing if the server exits); returns the body."""
    deadline = time.monotonic() + timeout
    while True:
        assert srv.running, f"herald serve exited during a transient ledger fault\n{srv.describe()}"
        resp = health(srv)
        if resp.status_code == status_code:
            return resp.json()
        assert resp.status_code in (200, 503), f"/health answered {resp.status_code}: {resp.text}"
        assert time.monotonic() < deadline, (
            f"/health did not answer {status_code} within {timeout}s (last: {resp.status_code} {resp.text})\n"
            f"{srv.describe()}")
        time.sleep(0.05)


def assert_stored_nothing(srv, db, email: str) -> None:
    assert outbox_rows(db, email) == [], f"a request answered 503 stored an outbox row for {email}"
    assert srv.mail_count(email) == 0, f"a request answered 503 sent mail to {email}"


# --------------------------------------------------------------------------- 4. lock
def test_a_held_write_lock_answers_503_and_health_recovers_by_itself(server):
    srv = server(accounts={"owner": "app"}, database={"busyTimeout": BUSY_TIMEOUT})
    first = health(srv)
    assert first.status_code == 200 and first.json() == {"status": "ok"}, first.text
    before = unique_email("before")
    ok(srv.send_oob("PASSWORD_RESET", before))
    srv.mail_to(before)

    blocked = unique_email("blocked")
    with WriteLock(srv.db_path) as lock:  # BEGIN IMMEDIATE from another process, held >= 3 s
        body = wait_for_health(srv, 503, timeout=lock.timeout)  # the embedded worker waits for the ledger
        assert body.get("status") == "unavailable", body
        assert isinstance(body.get("error"), str) and body["error"].startswith("ledger"), body

        resp = srv.send_oob("PASSWORD_RESET", blocked)
        assert resp.status_code != 500, f"a locked ledger is not an internal error: {resp.text}"
        assert_unavailable(resp)

        while lock.held_for() < 3.0:
            assert srv.running, f"herald serve exited while the ledger was locked\n{srv.describe()}"
            time.sleep(0.05)
        assert srv.running

    assert wait_for_health(srv, 200, timeout=10) == {"status": "ok"}
    after = unique_email("after")
    ok(srv.send_oob("PASSWORD_RESET", after))
    srv.mail_to(after)
    assert_stored_nothing(srv, srv.db_path, blocked)

    stderr = srv.stderr_text()
    assert any(UNAVAILABLE in line and " warning " in line for line in stderr.splitlines()), stderr
    assert any(RECOVERED in line and " info " in line for line in stderr.splitlines()), stderr
    assert srv.running  # and the fixture's SIGTERM must still exit 0


# --------------------------------------------------------------------------- 3. full disk
@pytest.fixture
def ledger_tmpfs(tmp_path):
    """An 8 MiB tmpfs at tmp_path/ledger for the database, unmounted at the end. Request it
    before `server` so it is torn down after the server process is gone."""
    directory = mount_tmpfs(tmp_path / "ledger", size="8m")
    try:
        yield directory
    finally:
        unmount(directory)


def test_a_full_disk_answers_503_not_500_and_recovers_when_space_returns(ledger_tmpfs, server):
    db = ledger_tmpfs / "herald.sqlite"
    srv = server(accounts={"owner": "app"}, database={"path": str(db), "busyTimeout": BUSY_TIMEOUT})
    first = unique_email("first")
    ok(srv.send_oob("PASSWORD_RESET", first))
    srv.mail_to(first)

    accepted, refused = [], []
    filler = fill_filesystem(ledger_tmpfs)
    try:
        assert free_bytes(ledger_tmpfs) < 64 * 1024, "the ledger's filesystem is not full"
        # A commit may still fit into WAL pages allocated earlier; keep asking until the disk bites.
        deadline = time.monotonic() + 15
        while len(refused) < 2:
            email = unique_email("full")
            resp = srv.send_oob("PASSWORD_RESET", email)
            assert resp.status_code != 500, f"a full disk is not an internal error: {resp.text}"
            if resp.status_code == 503:
                assert_unavailable(resp)
                refused.append(email)
            else:
                ok(resp)
                accepted.append(email)
            assert srv.running, f"herald serve exited on a full disk\n{srv.describe()}"
            assert time.monotonic() < deadline, (
                f"no 503 within 15 s of a full disk ({len(accepted)} requests answered 200)\n{srv.describe()}")
            time.sleep(0.05)
        assert srv.running
    finally:
        filler.unlink()

    after = unique_email("after")
    ok(srv.send_oob("PASSWORD_RESET", after))
    srv.mail_to(after)
    for email in accepted:  # a 200 means stored: it is delivered
        srv.mail_to(email)
    assert wait_for_health(srv, 200, timeout=15) == {"status": "ok"}
    for email in refused:
        assert_stored_nothing(srv, db, email)
    states = {row["state"] for row in query(db, "SELECT state FROM outbox")}
    assert states == {"sent"}, states

    srv.stop_cleanly()
    assert integrity_check(db) == ["ok"]


# --------------------------------------------------------------------------- 5. WAL growth
# Measured on a release build from before the issue #9 work (`herald serve` with its worker,
# 500 sequential sendOobCode requests, 3 runs): the -wal grows about 40 KiB per
# request (4,124,152-4,128,272 bytes after the first 100) until SQLite's default autocheckpoint
# (1,000 pages) restarts it, and the file never shrinks: 4,148,872-4,157,112 bytes after 500
# requests, the same after 6-15 s idle (an intermediate debug build: 4,148,872-4,206,552). The
# issue's "smaller than 4 MiB" (4,194,304) alone the old binary usually met already, so the bound
# is 1 MiB, a quarter of the old steady size: with periodic checkpoints (`wal_autocheckpoint`,
# `journal_size_limit`, a periodic `wal_checkpoint(TRUNCATE)`) the WAL is cut back once idle.
WAL_BOUND = 1 << 20
REQUESTS = 500


def test_the_wal_is_cut_back_after_a_burst_of_requests(server):
    srv = server(accounts={"owner": "app"})
    for i in range(REQUESTS):
        ok(srv.send_oob("PASSWORD_RESET", unique_email(f"wal{i:03d}")))

    def all_sent():
        rows = query(srv.db_path, "SELECT state, count(*) AS n FROM outbox GROUP BY state")
        return {r["state"]: r["n"] for r in rows} == {"sent": REQUESTS}

    deadline = time.monotonic() + 30
    while not (srv.capture.received_count >= REQUESTS and all_sent()):
        assert time.monotonic() < deadline, f"{srv.capture.received_count} of {REQUESTS} delivered in 30 s"
        time.sleep(0.2)

    # A few seconds of idle: the periodic checkpoint truncates the WAL.
    peak = wal_size(srv.db_path)
    deadline = time.monotonic() + 15
    while wal_size(srv.db_path) >= WAL_BOUND and time.monotonic() < deadline:
        time.sleep(0.25)
    size = wal_size(srv.db_path)
    assert size < WAL_BOUND, (
        f"the -wal is {size:,} bytes 15 s after the last of {REQUESTS} requests (at the end of the burst: "
        f"{peak:,}); periodic checkpoints should cut it below {WAL_BOUND:,}")
    assert srv.running

"""`/health` of a `herald serve --no-worker` follows the ledger by itself (issue #44).

With no embedded worker, nothing but requests touches the ledger: when they find it unavailable (here a full disk
under the SQLite ledger), `/health` answers 503 `{"status": "unavailable", "error": "ledger: …"}` for as long as
writes fail, and once space returns it is back to 200 within seconds with no further API request - only `/health`
polling, whose probe write (at most once a second) finds the ledger committing again. The API logs the episode once:
one "ledger unavailable; requests that must write …" warning and one "ledger available again after N s".

Mounting the tmpfs needs root; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import time

import pytest

from helpers import fill_filesystem, free_bytes, mount_tmpfs, query, unmount
from http_support import assert_unavailable, health, ok, unique_email

UNAVAILABLE_LINE = "ledger unavailable; requests that must write"
RECOVERED_LINE = "ledger available again after"
WHILE_FULL = 4  # seconds /health is polled while the disk stays full: four probe writes at least
BACK_WITHIN = 5  # seconds after space returns


@pytest.fixture
def ledger_tmpfs(tmp_path):
    """An 8 MiB tmpfs at tmp_path/ledger for the database, unmounted at the end. Request it before `server` so it is
    torn down after the server process is gone."""
    directory = mount_tmpfs(tmp_path / "ledger", size="8m")
    try:
        yield directory
    finally:
        unmount(directory)


def test_health_of_an_api_node_is_503_while_its_disk_is_full_and_ok_by_itself_after(ledger_tmpfs, server):
    db = ledger_tmpfs / "herald.sqlite"
    srv = server("--no-worker", accounts={"owner": "app"}, database={"path": str(db), "busyTimeout": "1s"})
    ok(srv.send_oob("PASSWORD_RESET", unique_email("first")))
    first = health(srv)
    assert first.status_code == 200 and first.json() == {"status": "ok"}, first.text

    refused = []
    filler = fill_filesystem(ledger_tmpfs)
    try:
        assert free_bytes(ledger_tmpfs) < 64 * 1024, "the ledger's filesystem is not full"
        # A commit may still fit into pages SQLite allocated earlier; keep asking until the disk bites.
        deadline = time.monotonic() + 15
        while not refused:
            email = unique_email("full")
            resp = srv.send_oob("PASSWORD_RESET", email)
            assert resp.status_code in (200, 503), f"a full disk is answered 200 or 503, not {resp.status_code}: {resp.text}"
            if resp.status_code == 503:
                assert_unavailable(resp)
                refused.append(email)
            assert time.monotonic() < deadline, f"no 503 within 15 s of a full disk\n{srv.describe()}"
            time.sleep(0.05)

        # While writes fail, /health says so - also after several of its own probe writes.
        polls = []
        started = time.monotonic()
        while time.monotonic() - started < WHILE_FULL:
            resp = health(srv)
            polls.append(resp.status_code)
            assert resp.status_code == 503, (
                f"/health answered {resp.status_code} {resp.text} {time.monotonic() - started:.1f}s after a request "
                f"was refused for a full disk, which is still full (polls so far: {polls})\n{srv.stderr_text()}")
            body = resp.json()
            assert body.get("status") == "unavailable" and str(body.get("error", "")).startswith("ledger: "), body
            time.sleep(0.25)
        # ...and they do still fail.
        again = unique_email("still-full")
        resp = srv.send_oob("PASSWORD_RESET", again)
        assert_unavailable(resp)
        refused.append(again)
        assert health(srv).status_code == 503
    finally:
        filler.unlink()

    freed = time.monotonic()
    while True:  # /health alone: no API request until it says ok
        resp = health(srv)
        if resp.status_code == 200:
            break
        assert resp.status_code == 503, resp.text
        assert time.monotonic() - freed < BACK_WITHIN, (
            f"/health still {resp.status_code} {resp.text} {BACK_WITHIN}s after space returned\n{srv.stderr_text()}")
        time.sleep(0.1)
    back = time.monotonic() - freed
    assert resp.json() == {"status": "ok"}, resp.text
    print(f"/health 503 on {len(polls)} polls over {WHILE_FULL}s of a full disk; ok {back:.2f}s after space returned")

    ok(srv.send_oob("PASSWORD_RESET", unique_email("after")))
    for email in refused:
        assert query(db, "SELECT id FROM outbox WHERE recipient = ?", (email,)) == [], f"a refused request stored {email}"

    lines = srv.stderr_text().splitlines()
    warned = [line for line in lines if UNAVAILABLE_LINE in line]
    assert len(warned) == 1, f"{len(warned)} '{UNAVAILABLE_LINE}' lines for one episode:\n" + "\n".join(warned)
    assert " warning " in warned[0], warned[0]
    recovered = [line for line in lines if RECOVERED_LINE in line]
    assert len(recovered) == 1, f"{len(recovered)} '{RECOVERED_LINE}' lines for one episode:\n" + "\n".join(recovered)
    assert srv.running

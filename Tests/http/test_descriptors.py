"""`herald serve` out of file descriptors (issue #44, item 6).

Out of descriptors, SQLite says only "unable to open database file" and a connection attempt only that it
failed; `serve` at its limit used to answer `/health` 200 and log nothing. Now the process names the cause:

* `/health` answers 503 `{"status": "unavailable", "error": EXHAUSTION}` and logs EXHAUSTION once at error level;
  once descriptors are free again it answers 200 and logs "file descriptors available again" once;
* a request that must open the ledger answers 503 UNAVAILABLE, and the ledger's warning names EXHAUSTION instead
  of "unable to open database file";
* the embedded worker's SMTP connection failure (no socket could be opened) carries EXHAUSTION in its warning and
  in the `delivery_attempts` row, uncharged, and the mail goes out once descriptors are free.

How the exhaustion is made, deterministically: `herald serve` raises its soft RLIMIT_NOFILE to the hard one at
start, so both are set to LIMIT (a wrapper sets them and execs the binary: same pid). The test opens one keep-alive
connection (`spare`) and makes a request on it, then opens raw idle TCP connections until /proc/PID/fd holds LIMIT
descriptors: Herald accepts each (one descriptor per connection) until accept(2) fails with EMFILE, the rest wait in
the listen backlog. The spare connection, accepted before, then asks. Closing the idle connections frees the
descriptors.

The front door is configured so that descriptors, not its own caps, run out: `server.maxConnections` defaults to the
open-file limit less 64 (here 64 connections, which would be refused 503 long before the descriptors end), so it is
set high; the idle connections come from several loopback addresses (127.0.0.x are distinct clients) in groups below
`server.maxConnectionsPerClient` (128); `server.idleTimeout` (30 s by default) is raised so that no idle connection
is closed during the test.

Needs Linux (/proc/PID/fd, binding 127.0.0.x); skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from helpers import query, wait_until
from http_support import API_KEY, HTTP_TIMEOUT, health, unique_email

LIMIT = 128  # soft = hard RLIMIT_NOFILE of `herald serve`; it starts with ~25 descriptors in use
EXHAUSTION = ("this process is out of file descriptors (EMFILE): raise its open-file limit "
              "(ulimit -n, systemd LimitNOFILE)")
RECOVERED = "file descriptors available again"
SQLITE_CANTOPEN = "unable to open database file"
PER_ADDRESS = 32  # idle connections per loopback source address, below maxConnectionsPerClient (128)
BACKLOG_EXTRA = 8  # connections beyond the limit, left in the listen backlog
FRONT_DOOR = {"maxConnections": 100_000, "idleTimeout": "120s"}

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not Path("/proc/self/fd").is_dir(),
                                reason="needs Linux: /proc/PID/fd and 127.0.0.x source addresses")


@pytest.fixture
def herald_bin(herald_bin: Path, tmp_path: Path) -> Path:
    """The binary under test behind a wrapper that sets RLIMIT_NOFILE to LIMIT:LIMIT and execs it (same pid)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < LIMIT and os.geteuid() != 0:
        pytest.skip(f"the hard open-file limit here ({hard}) is below {LIMIT} and only root may raise it")
    wrapper = tmp_path / "bin" / "herald-nofile"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import os, resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({LIMIT}, {LIMIT}))\n"
        f"os.execv({str(herald_bin)!r}, [{str(herald_bin)!r}] + sys.argv[1:])\n",
        encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


# --------------------------------------------------------------------------- descriptors
def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def open_files_limit(pid: int) -> tuple:
    """(soft, hard) RLIMIT_NOFILE of the process, from /proc/PID/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(f"no 'Max open files' in /proc/{pid}/limits")


def exhaust(srv) -> list:
    """Opens idle TCP connections to `srv` until its process holds LIMIT descriptors; returns them (close them to
    give the descriptors back)."""
    pid = srv.proc.pid
    missing = LIMIT - fd_count(pid)
    assert 0 < missing < 4 * LIMIT, f"herald serve holds {fd_count(pid)} descriptors of {LIMIT}"
    idle: list = []
    try:
        for i in range(missing + BACKLOG_EXTRA):
            conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            idle.append(conn)
            conn.settimeout(HTTP_TIMEOUT)
            conn.bind((f"127.0.0.{10 + i // PER_ADDRESS}", 0))
            conn.connect(("127.0.0.1", srv.port))
        wait_until(lambda: fd_count(pid) >= LIMIT or not srv.running, timeout=10,
                   what=f"herald serve to hold {LIMIT} descriptors (has {fd_count(pid)})")
    except BaseException:
        close_all(idle)
        raise
    assert srv.running, f"herald serve exited when it ran out of descriptors\n{srv.describe()}"
    time.sleep(0.3)  # accept(2) keeps failing: the count stays at the limit
    assert fd_count(pid) == LIMIT, f"herald serve holds {fd_count(pid)} descriptors, expected the limit {LIMIT}"
    return idle


def close_all(conns: list) -> None:
    for conn in conns:
        try:
            conn.close()
        except OSError:
            pass
    conns.clear()


# --------------------------------------------------------------------------- HTTP on a raw keep-alive connection
class RawClient:
    """One HTTP/1.1 keep-alive connection, opened once and reused for every request."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT)
        self._buffer = b""

    def request(self, method: str, path: str, body: Optional[dict] = None) -> tuple:
        """Returns (status, body as JSON)."""
        data = json.dumps(body).encode() if body is not None else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + data)
        while b"\r\n\r\n" not in self._buffer:
            self._read(f"{method} {path}")
        header, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(fields.get("content-length", "0"))
        while len(self._buffer) < length:
            self._read(f"{method} {path}")
        payload, self._buffer = self._buffer[:length], self._buffer[length:]
        return status, json.loads(payload) if payload else None

    def _read(self, what: str) -> None:
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise AssertionError(f"no complete answer to {what} within {HTTP_TIMEOUT} s") from None
        assert chunk, f"herald serve closed the keep-alive connection during {what}"
        self._buffer += chunk

    def close(self) -> None:
        self.sock.close()


def lines_with(stderr: str, needle: str) -> list:
    return [line for line in stderr.splitlines() if needle in line]


def wait_for_health_ok(srv, spare: RawClient, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status, body = spare.request("GET", "/health")
        if status == 200:
            assert body == {"status": "ok"}, body
            return
        assert status == 503 and body.get("error") == EXHAUSTION, (status, body)
        assert time.monotonic() < deadline, (
            f"/health still 503 {timeout}s after the descriptors were freed: {body}\n{srv.stderr_text()}")
        time.sleep(0.1)


# --------------------------------------------------------------------------- 1. /health
def test_health_is_503_naming_emfile_while_out_of_descriptors_and_ok_after(server):
    srv = server(server=FRONT_DOOR)
    pid = srv.proc.pid
    assert open_files_limit(pid) == (LIMIT, LIMIT), "the wrapper did not set the open-file limit"
    spare = RawClient(srv.port)
    idle: list = []
    try:
        assert spare.request("GET", "/health") == (200, {"status": "ok"})
        in_use = fd_count(pid)
        idle = exhaust(srv)
        print(f"herald serve: {in_use} descriptors idle, {LIMIT} after {len(idle)} idle connections")

        for _ in range(3):  # answered, and logged once however often it is asked
            status, body = spare.request("GET", "/health")
            assert (status, body) == (503, {"status": "unavailable", "error": EXHAUSTION}), (
                f"/health at the descriptor limit answered {status} {body}\n{srv.stderr_text()}")
            time.sleep(0.2)
        assert srv.running

        close_all(idle)
        wait_for_health_ok(srv, spare)
        for _ in range(2):
            assert spare.request("GET", "/health") == (200, {"status": "ok"})
        fresh = health(srv)  # a new connection is accepted again
        assert fresh.status_code == 200 and fresh.json() == {"status": "ok"}, fresh.text
    finally:
        close_all(idle)
        spare.close()

    stderr = srv.stderr_text()
    exhausted = lines_with(stderr, EXHAUSTION)
    assert len(exhausted) == 1, f"{len(exhausted)} lines name the exhaustion, expected one:\n{stderr}"
    assert " error " in exhausted[0], f"the exhaustion is not logged at error level: {exhausted[0]}"
    recovered = lines_with(stderr, RECOVERED)
    assert len(recovered) == 1, f"{len(recovered)} '{RECOVERED}' lines, expected one:\n{stderr}"
    assert " info " in recovered[0], recovered[0]
    assert stderr.index(exhausted[0]) < stderr.index(recovered[0]), stderr
    assert SQLITE_CANTOPEN not in stderr, stderr


# --------------------------------------------------------------------------- 2. the ledger
def test_a_write_out_of_descriptors_is_503_and_the_ledger_names_emfile(server):
    # A fresh server's first API write opens a ledger connection of its own: at the limit, SQLite cannot open it.
    srv = server(accounts={"owner": "app"}, server=FRONT_DOOR)
    spare = RawClient(srv.port)
    refused, after = unique_email("refused"), unique_email("after")
    idle: list = []
    try:
        assert spare.request("GET", "/health") == (200, {"status": "ok"})
        idle = exhaust(srv)
        status, body = spare.request("POST", f"/v1/accounts:sendOobCode?key={API_KEY}",
                                     {"requestType": "PASSWORD_RESET", "email": refused})
        assert status == 503, (
            f"a write at the descriptor limit answered {status} {body} (a 200 means the write needed no new "
            f"descriptor here, and this test proves nothing)\n{srv.stderr_text()}")
        assert body["error"]["code"] == 503 and body["error"]["status"] == "UNAVAILABLE", body
        assert srv.running

        close_all(idle)
        wait_for_health_ok(srv, spare)  # its probe write ends the ledger episode too
        status, body = spare.request("POST", f"/v1/accounts:sendOobCode?key={API_KEY}",
                                     {"requestType": "PASSWORD_RESET", "email": after})
        assert status == 200, (status, body)
    finally:
        close_all(idle)
        spare.close()
    srv.mail_to(after)
    assert query(srv.db_path, "SELECT id FROM outbox WHERE recipient = ?", (refused,)) == [], \
        "a request answered 503 stored an outbox row"
    assert srv.mail_count(refused) == 0

    stderr = srv.stderr_text()
    unavailable = lines_with(stderr, "ledger unavailable")
    assert unavailable, f"no 'ledger unavailable' line\n{stderr}"
    assert all(f"ledger unavailable: {EXHAUSTION}" in line for line in unavailable), (
        "the ledger's error must name the exhausted descriptors:\n" + "\n".join(unavailable))
    assert SQLITE_CANTOPEN not in stderr, stderr


# --------------------------------------------------------------------------- 3. the worker's SMTP connection
BACKOFF = "4s"  # the connection's pause after a failure: the exhaustion is in place well before it ends


def test_an_smtp_connection_out_of_descriptors_names_emfile_and_the_mail_goes_out_after(server):
    srv = server(accounts={"owner": "app"}, server=FRONT_DOOR,
                 worker={"connectionBackoffBase": BACKOFF, "connectionBackoffCap": BACKOFF})
    relay = srv.capture
    rcpt = unique_email("smtp")
    spare = RawClient(srv.port)
    idle: list = []
    try:
        # Queue the mail while the relay refuses: the worker's first attempt fails (ECONNREFUSED) and pauses.
        relay.pause_listening()
        status, body = spare.request("POST", f"/v1/accounts:sendOobCode?key={API_KEY}",
                                     {"requestType": "PASSWORD_RESET", "email": rcpt})
        assert status == 200, (status, body)
        wait_until(lambda: lines_with(srv.stderr_text(), "SMTP connection failed"), timeout=10,
                   what="the first SMTP connection failure (relay refusing)")
        assert EXHAUSTION not in srv.stderr_text(), "EMFILE named while descriptors were free"
        # The relay is back; only the missing descriptors stop the next attempt.
        relay.resume_listening()
        reached = relay.connections
        idle = exhaust(srv)
        assert len(lines_with(srv.stderr_text(), "SMTP connection failed")) == 1, (
            "the worker retried before the descriptors were exhausted: the test proves nothing\n" + srv.stderr_text())

        failures = wait_until(
            lambda: [l for l in lines_with(srv.stderr_text(), "SMTP connection failed") if EXHAUSTION in l],
            timeout=15, what="an SMTP connection failure naming EMFILE", interval=0.1)
        assert " warning " in failures[0], failures[0]
        assert relay.connections == reached and relay.received_count == 0, "a connection reached the relay"
        # The log line comes as the send finishes; the attempt is in the ledger once the desk has recorded it.
        attempts = wait_until(
            lambda: [a for a in query(srv.db_path, "SELECT outcome, reply_text FROM delivery_attempts ORDER BY id")
                     if a["outcome"] == "connection" and a["reply_text"].startswith(EXHAUSTION)],
            timeout=10, what="the attempt naming EMFILE recorded")
        assert attempts, attempts
        [row] = query(srv.db_path, "SELECT state, attempts FROM outbox WHERE recipient = ?", (rcpt,))
        assert row["attempts"] == 0 and row["state"] != "sent", f"a connection failure is not charged: {row}"
        assert srv.running
    finally:
        close_all(idle)
        spare.close()

    srv.mail_to(rcpt)
    time.sleep(0.5)
    assert srv.mail_count(rcpt) == 1, "sent more than once"
    wait_until(lambda: query(srv.db_path, "SELECT state FROM outbox WHERE recipient = ?", (rcpt,)) == [{"state": "sent"}],
               timeout=10, what="the outbox row marked sent")
    assert SQLITE_CANTOPEN not in srv.stderr_text(), srv.stderr_text()

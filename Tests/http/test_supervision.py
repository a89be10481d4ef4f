"""`herald serve` supervises its parts: the HTTP server and the worker are services of one
group. A worker that dies turns /health to 503 naming the failure, then the server drains
and the process exits non-zero, instead of accepting mail nobody sends."""

from __future__ import annotations

import sqlite3
import time

import requests

from http_support import HTTP_TIMEOUT, ok, unique_email

# A real fault in the real database: the worker's claim (outbox rows moving to 'sending')
# aborts, while the API's inserts still succeed.
BREAK_CLAIMS = """
CREATE TRIGGER injected_claim_failure BEFORE UPDATE OF state ON outbox WHEN NEW.state = 'sending'
BEGIN SELECT RAISE(ABORT, 'injected claim failure'); END;
"""


def health(srv) -> requests.Response:
    return requests.get(f"{srv.url}/health", timeout=HTTP_TIMEOUT)


def test_a_dead_worker_turns_health_to_503_and_the_process_exits_nonzero(server):
    srv = server(server={"failureGrace": "3s"}, accounts={"owner": "app"})
    assert health(srv).status_code == 200 and health(srv).json() == {"status": "ok"}
    with sqlite3.connect(srv.db_path) as db:
        db.executescript(BREAK_CLAIMS)
    ok(srv.send_oob("PASSWORD_RESET", unique_email("doomed")))

    deadline = time.monotonic() + 15
    while health(srv).status_code == 200:
        assert time.monotonic() < deadline, f"/health stayed 200 after the worker's claims failed\n{srv.describe()}"
        time.sleep(0.05)
    failing = health(srv)
    assert failing.status_code == 503, failing.text
    body = failing.json()
    assert body["status"] == "failing" and "worker" in body["error"] and "injected claim failure" in body["error"], body

    code = srv.proc.wait(timeout=30)
    srv.returncode = code
    assert code != 0, f"herald serve exited 0 after its worker died\n{srv.describe()}"
    errors = [line for line in srv.stderr_text().splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "injected claim failure" in errors[0], srv.stderr_text()


def test_without_the_embedded_worker_health_stays_ok(server):
    srv = server("--no-worker", accounts={"owner": "app"})
    with sqlite3.connect(srv.db_path) as db:
        db.executescript(BREAK_CLAIMS)
    ok(srv.send_oob("PASSWORD_RESET", unique_email("queued")))
    time.sleep(0.5)
    assert health(srv).status_code == 200

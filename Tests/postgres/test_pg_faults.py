"""Workers and API nodes on a PostgreSQL ledger that misbehaves (issue #44, "Never frozen").

* A storm of `pg_terminate_backend` (every 50 ms, >= 100 backends cut) under three `herald worker --concurrency 2`:
  every row delivered and `sent`, none left `sending`, duplicates only where a worker was given up for dead (none
  here: all run on this host and none dies), every worker exits 0 within 15 s of SIGTERM.
* Eight `pg_ctl restart -m fast`, 3 s apart, under three workers: the same.
* `LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE` held by another session under `herald serve --no-worker` with
  `database.busyTimeout: 2s`: each `sendOobCode` is a 503 in Firebase's envelope within busyTimeout + 1 s, `/health`
  answers 503 meanwhile and ok again within seconds of the release, and the episode is logged once.
* The whole server frozen (SIGSTOP of the postmaster and every backend) for 40 s under two workers: nothing lost,
  nothing sent twice, no worker declared dead.

The storms cut only the backends of a role of the test's own (`PostgresCluster.create_role`), so the test's own
connections survive. Restarting and freezing need the local throwaway cluster of scripts/with-postgres.sh (its data
directory, `pg_ctl`, the postmaster's PID); elsewhere those tests are skipped, saying why. Each test leaves the
cluster up and answering.

The crash bound is set as Tests/postgres/test_multi_node.py sets it (`worker.unrecordedPerConnection: 2`); the lease
keeps its default (5 minutes), longer than any test here, so it can hide no duplicate and no stuck row: a row a
worker lost track of stays `sending` and fails the test.
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
import requests

from helpers import API_KEY, wait_until, write_config, write_recipients
from http_support import assert_unavailable, health
from pg_support import Frozen, PostgresCluster, TerminateStorm, psql_binary
from test_multi_node import message_id, receptions

CONTINUE = "https://app.example.com/finish"
UNRECORDED = 2  # worker.unrecordedPerConnection: at most 2 unrecorded sends per SMTP connection
CONCURRENCY = 2  # `herald worker --concurrency 2`: SMTP connections per worker
SIGTERM_WAIT = 15  # seconds each worker may take to exit after SIGTERM
DIED = " died ("  # the line a worker logs when it gives another up for dead


# --------------------------------------------------------------------------- fixtures and helpers
@pytest.fixture
def cluster(postgres) -> PostgresCluster:
    """The server of HERALD_TEST_POSTGRES, as its administrator sees it; up and answering after the test."""
    c = PostgresCluster(postgres.base_url)
    yield c
    c.wait_healthy(timeout=60)


@pytest.fixture
def role(cluster):
    """A login role of the test's own for every herald process: the storms cut its backends and no others.
    Dropped with what it owns (the test's schema) after the herald processes are gone."""
    name = cluster.create_role()
    yield name
    cluster.drop_role(name)


class Run:
    """ROWS messages queued on the test's schema (as the test's role), WORKERS `herald worker --concurrency 2`."""

    def __init__(self, postgres, cluster, role, herald, start_capture, tmp_path, rows: int, workers: int,
                 **worker_settings) -> None:
        self.postgres, self.cluster, self.herald, self.rows = postgres, cluster, herald, rows
        self.capture_log = tmp_path / "capture.jsonl"
        self.capture = start_capture(jsonl=self.capture_log)
        self.config = write_config(
            tmp_path, self.capture, name="faults.yaml",
            database={"url": cluster.url_as(role, postgres.schema)},
            tokens={"keyFile": str(tmp_path / "signing-keys.json")},
            smtp={"connections": CONCURRENCY},
            worker={"unrecordedPerConnection": UNRECORDED, "pollInterval": "100ms", **worker_settings})
        recipients = write_recipients(tmp_path, [f"fault{i:05d}@x.test" for i in range(rows)])
        result = herald("send", "sign-in", "--recipients", recipients, "--continue-url", CONTINUE,
                        config=self.config, timeout=90)
        assert result.stdout.strip() == f"queued {rows} message(s)", result.stdout
        self.t0 = time.monotonic()
        self.workers = [herald.start("worker", "--concurrency", str(CONCURRENCY), config=self.config,
                                     name=f"worker{i}") for i in range(workers)]

    def log(self, what: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {what}", flush=True)

    def wait_received(self, count: int, timeout: float) -> None:
        wait_until(lambda: self.capture.received_count >= count or any(w.proc.poll() is not None for w in self.workers),
                   timeout=timeout, what=f"{count} messages received", interval=0.1)
        for w in self.workers:
            assert w.proc.poll() is None, f"worker {w.pid} exited ({w.proc.returncode}) before the fault\n{w.stderr()}"

    def states(self) -> dict:
        return {r["state"]: r["n"] for r in self.cluster.query(
            f"SELECT state, count(*) AS n FROM {self.postgres.schema}.outbox GROUP BY state", tries=5)}

    def wait_all_sent(self, timeout: float) -> float:
        """Until every row is `sent` (failing with the ledger's states and the workers' logs)."""
        started = time.monotonic()
        last: dict = {}
        while True:
            last = self.states()
            if last == {"sent": self.rows}:
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                tails = "\n".join(f"--- worker {w.pid} (alive: {w.proc.poll() is None}) stderr tail\n"
                                  + "\n".join(w.stderr().splitlines()[-25:]) for w in self.workers)
                pytest.fail(f"not every row sent {timeout}s after the fault: ledger {last}, "
                            f"{self.capture.received_count} received\n{tails}")
            time.sleep(0.5)

    def stop_workers(self) -> list:
        """SIGTERM every worker; each must exit 0 within SIGTERM_WAIT seconds. Returns the exit times."""
        for w in self.workers:
            assert w.proc.poll() is None, f"worker {w.pid} exited ({w.proc.returncode}) before SIGTERM\n{w.stderr()}"
        sent_at = time.monotonic()
        for w in self.workers:
            w.signal(signal.SIGTERM)
        took = []
        for w in self.workers:
            left = max(0.1, SIGTERM_WAIT - (time.monotonic() - sent_at))
            code = w.wait(timeout=left)  # fails the test (and kills the worker) past SIGTERM_WAIT
            took.append(round(time.monotonic() - sent_at, 2))
            assert code == 0, f"worker {w.pid} exited {code} on SIGTERM\n{w.stderr()}"
        return took

    def verdict(self) -> dict:
        """Every row delivered, none twice beyond the crash bound of the workers given up for dead; returns counts."""
        rows = self.cluster.query(f"SELECT id, state, message_id FROM {self.postgres.schema}.outbox", tries=5)
        assert len(rows) == self.rows
        states = {}
        for r in rows:
            states[r["state"]] = states.get(r["state"], 0) + 1
        by_id = {message_id(r["message_id"]): r for r in rows}
        assert len(by_id) == self.rows, "Message-IDs are not unique per outbox row"
        captured = receptions(self.capture_log)
        seen: dict = {}
        for m in captured:
            assert m["message_id"] in by_id, f"delivered a Message-ID the ledger does not hold: {m['message_id']}"
            seen[m["message_id"]] = seen.get(m["message_id"], 0) + 1
        missing = [by_id[m]["id"] for m in by_id if m not in seen]
        duplicates = {by_id[m]["id"]: n for m, n in seen.items() if n > 1}
        repeats = sum(n - 1 for n in duplicates.values())
        died = [line for w in self.workers for line in w.stderr().splitlines() if DIED in line]
        interrupted = {r["outbox_id"] for r in self.cluster.query(
            f"SELECT DISTINCT outbox_id FROM {self.postgres.schema}.delivery_attempts WHERE outcome = 'interrupted'",
            tries=5)}
        counts = {"states": states, "received": len(captured), "missing": len(missing), "duplicate_deliveries": repeats,
                  "duplicated_rows": len(duplicates), "died_lines": len(died)}
        self.log(f"verdict: {counts}")
        assert states == {"sent": self.rows}, f"ledger {states}: rows left unsent or `sending`"
        assert not missing, f"{len(missing)} rows never delivered, e.g. outbox ids {sorted(missing)[:10]}"
        # A row is sent twice only when a worker was given up for dead and its rows went to another: then at most
        # UNRECORDED per SMTP connection of that worker, each charged an `interrupted` attempt. No worker may be given
        # up here (all run on this host and stay alive), so the bound is 0.
        bound = UNRECORDED * CONCURRENCY * len(died)
        assert repeats <= bound, (
            f"{repeats} duplicate deliveries of {len(duplicates)} rows (outbox id: receptions "
            f"{dict(sorted(duplicates.items())[:20])}); bound {bound} = {UNRECORDED} per SMTP connection x "
            f"{CONCURRENCY} connections x {len(died)} workers given up for dead")
        unexplained = sorted(set(duplicates) - interrupted)
        assert not unexplained, f"rows delivered twice without an `interrupted` attempt: {unexplained[:20]}"
        assert not died, "a live worker on this host was given up for dead:\n" + "\n".join(died)
        return counts


# --------------------------------------------------------------------------- terminate storm
STORM_ROWS = 2500
STORM_INTERVAL = 0.05
STORM_SECONDS = 10
STORM_TERMINATIONS = 100


def test_terminate_storm_under_three_workers_loses_nothing_and_stops_no_one(
        postgres, cluster, role, herald, start_capture, tmp_path):
    run = Run(postgres, cluster, role, herald, start_capture, tmp_path, rows=STORM_ROWS, workers=3)
    run.wait_received(100, timeout=30)
    run.log(f"storm starts with {run.capture.received_count} received")
    with TerminateStorm(cluster, role, interval=STORM_INTERVAL) as storm:
        took = storm.run(min_seconds=STORM_SECONDS, min_terminated=STORM_TERMINATIONS, max_seconds=30)
    run.log(f"storm over after {took:.1f}s: {storm.rounds} rounds, {storm.terminated} backends terminated; "
            f"{run.capture.received_count} received")
    assert storm.terminated >= STORM_TERMINATIONS, (
        f"only {storm.terminated} backends terminated in {took:.1f}s ({storm.rounds} rounds): the storm did not bite")
    drained = run.wait_all_sent(timeout=45)
    run.log(f"all {STORM_ROWS} sent {drained:.1f}s after the storm")
    run.log(f"workers exited after SIGTERM in {run.stop_workers()} s")
    run.verdict()


# --------------------------------------------------------------------------- fast restarts
RESTART_ROWS = 2500
RESTARTS = 8
RESTART_GAP = 3


def test_eight_fast_restarts_under_three_workers_lose_nothing_and_stop_no_one(
        postgres, cluster, role, herald, start_capture, tmp_path):
    cluster.data_directory()  # skips unless this is the local cluster of scripts/with-postgres.sh
    run = Run(postgres, cluster, role, herald, start_capture, tmp_path, rows=RESTART_ROWS, workers=3)
    # A relay slow enough (50 ms a message, six connections) that sending spans every restart (about 30 s).
    run.capture.delay = 0.05
    run.wait_received(100, timeout=30)
    durations = []
    try:
        for n in range(RESTARTS):
            assert run.capture.received_count < RESTART_ROWS, "every row was sent before the restarts ended"
            run.log(f"restart {n + 1} with {run.capture.received_count} received")
            durations.append(round(cluster.restart_fast(), 2))
            time.sleep(RESTART_GAP)
    finally:
        cluster.wait_healthy(timeout=60)
    run.log(f"{RESTARTS} restarts took {durations} s; {run.capture.received_count} received")
    drained = run.wait_all_sent(timeout=45)
    run.log(f"all {RESTART_ROWS} sent {drained:.1f}s after the last restart")
    run.log(f"workers exited after SIGTERM in {run.stop_workers()} s")
    run.verdict()


# --------------------------------------------------------------------------- a table lock under the API
LOCK_BUSY_TIMEOUT = 2  # database.busyTimeout, seconds
LOCK_HELD = 8  # seconds the lock is held (the 30 s shortened: the answers are judged each, not in total)
UNAVAILABLE_LINE = "ledger unavailable; requests that must write"
RECOVERED_LINE = "ledger available again after"


class TableLock:
    """`LOCK TABLE outbox IN ACCESS EXCLUSIVE MODE` in a transaction of a psql session of our own, held until
    release() (or the end of the block)."""

    def __init__(self, cluster: PostgresCluster, table: str) -> None:
        self.cluster, self.table = cluster, table
        self.proc = None
        self.acquired_at = None

    def __enter__(self) -> "TableLock":
        self.proc = subprocess.Popen([psql_binary(), "-X", "-q", "-At", "-d", self.cluster.base_url],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.proc.stdin.write(f"BEGIN; LOCK TABLE {self.table} IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        assert line == "locked", f"could not lock {self.table}: {line!r}"
        self.acquired_at = time.monotonic()
        return self

    def held_for(self) -> float:
        return time.monotonic() - self.acquired_at

    def release(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.write("ROLLBACK;\n\\q\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=15)
        except (BrokenPipeError, OSError):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None

    def __exit__(self, *exc) -> None:
        self.release()


def test_a_locked_outbox_answers_503_within_the_busy_timeout_and_health_follows(
        postgres, cluster, role, server, tmp_path):
    srv = server("--no-worker", accounts={"owner": "app"},
                 database={"url": cluster.url_as(role, postgres.schema), "busyTimeout": f"{LOCK_BUSY_TIMEOUT}s"})
    body = {"requestType": "EMAIL_SIGNIN", "continueUrl": CONTINUE, "canHandleCodeInApp": True}

    def send(email: str) -> tuple:
        started = time.monotonic()
        try:
            resp = requests.post(f"{srv.url}/v1/accounts:sendOobCode", params={"key": API_KEY},
                                 json={**body, "email": email}, timeout=LOCK_BUSY_TIMEOUT + 5)
        except requests.Timeout:
            pytest.fail(f"sendOobCode for {email} unanswered after {LOCK_BUSY_TIMEOUT + 5}s "
                        f"(database.busyTimeout {LOCK_BUSY_TIMEOUT}s)\n{srv.stderr_text()}")
        return resp, time.monotonic() - started

    resp, took = send("before@x.test")
    assert resp.status_code == 200, resp.text
    assert health(srv).status_code == 200

    answers, healths = [], []
    with TableLock(cluster, f"{postgres.schema}.outbox") as lock:
        n = 0
        while lock.held_for() < LOCK_HELD - LOCK_BUSY_TIMEOUT - 1:
            resp, took = send(f"locked{n}@x.test")
            n += 1
            answers.append((resp.status_code, round(took, 2)))
            assert resp.status_code == 503, f"answer {n} during the lock: {resp.status_code} {resp.text}"
            assert_unavailable(resp)
            assert took <= LOCK_BUSY_TIMEOUT + 1, (
                f"answer {n} took {took:.2f}s: more than busyTimeout ({LOCK_BUSY_TIMEOUT}s) + 1 s")
            h = health(srv)
            healths.append(h.status_code)
            assert h.status_code == 503, f"/health during the lock (after answer {n}): {h.status_code} {h.text}"
            payload = h.json()
            assert payload.get("status") == "unavailable" and str(payload.get("error", "")).startswith("ledger: "), payload
        while lock.held_for() < LOCK_HELD:  # /health alone, no request, until the lock goes
            h = health(srv)
            healths.append(h.status_code)
            assert h.status_code == 503, f"/health during the lock, {lock.held_for():.1f}s in: {h.status_code} {h.text}"
            time.sleep(0.2)
    released = time.monotonic()
    # Back by itself: /health polling only, no request.
    wait_until(lambda: health(srv).status_code == 200, timeout=5, what="/health 200 after the lock's release")
    back = time.monotonic() - released
    print(f"{len(answers)} answers during the lock {answers}; /health {len(healths)} polls all 503; ok {back:.2f}s "
          "after the release")
    resp, took = send("after@x.test")
    assert resp.status_code == 200, resp.text
    assert postgres.query("SELECT recipient FROM outbox WHERE recipient LIKE 'locked%'") == [], \
        "a request answered 503 stored a row"

    stderr = srv.stderr_text()
    warned = [line for line in stderr.splitlines() if UNAVAILABLE_LINE in line]
    assert len(warned) == 1, f"{len(warned)} '{UNAVAILABLE_LINE}' lines for one episode:\n" + "\n".join(warned)
    assert " warning " in warned[0] or '"warning"' in warned[0], warned[0]
    recovered = [line for line in stderr.splitlines() if RECOVERED_LINE in line]
    assert len(recovered) == 1, f"{len(recovered)} '{RECOVERED_LINE}' lines for one episode:\n{stderr}"


# --------------------------------------------------------------------------- the server frozen
FREEZE_ROWS = 1500
FREEZE_SECONDS = 40


def test_a_frozen_server_for_40_seconds_under_two_workers_loses_and_repeats_nothing(
        postgres, cluster, role, herald, start_capture, tmp_path):
    cluster.data_directory()  # skips unless this is the local cluster of scripts/with-postgres.sh
    run = Run(postgres, cluster, role, herald, start_capture, tmp_path, rows=FREEZE_ROWS, workers=2)
    run.wait_received(100, timeout=30)
    before = run.capture.received_count
    with Frozen(cluster) as frozen:
        run.log(f"froze {len(frozen.pids)} PostgreSQL processes with {before} received")
        time.sleep(FREEZE_SECONDS)
        during = run.capture.received_count
        for w in run.workers:
            assert w.proc.poll() is None, f"worker {w.pid} exited ({w.proc.returncode}) while PostgreSQL was frozen\n{w.stderr()}"
    thawed = time.monotonic()
    run.log(f"thawed; {during - before} received during the freeze")
    cluster.wait_healthy(timeout=30)
    run.wait_received(during + 1, timeout=45)
    run.log(f"sending again {time.monotonic() - thawed:.1f}s after the thaw")
    drained = run.wait_all_sent(timeout=60)
    run.log(f"all {FREEZE_ROWS} sent {drained:.1f}s after the thaw")
    run.log(f"workers exited after SIGTERM in {run.stop_workers()} s")
    counts = run.verdict()
    assert counts["duplicate_deliveries"] == 0

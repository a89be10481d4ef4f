"""Several herald processes on one PostgreSQL ledger (`database.url: postgres://…?schema=…`).

* Three `herald worker`s and two `herald serve --no-worker` nodes share one ledger: 10,000 messages queued by
  `herald send --recipients` and 1,000 concurrent API requests split across both nodes, one worker SIGKILLed
  mid-run. Every row is delivered, duplicates stay within the dead worker's unrecorded sends, every row ends
  'sent'.
* 50 concurrent redemptions of one code across both nodes: exactly one wins.
* `herald migrate --from sqlite:PATH` copies a SQLite ledger (sent mail, an account, its codes).
* A bad `database.url` stops `herald migrate` with one line.
* A worker of another host that falls silent is given up after `worker.heartbeatTimeout`: its rows are sent,
  at most its bound per connection charged `interrupted`.
"""

from __future__ import annotations

import base64
import json
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from helpers import (
    API_KEY, action_link, assert_one_error_line, by_recipient, deep_merge, kill_when_received, raw_header,
    wait_until, write_config, write_recipients,
)
from http_support import assert_error, code_of, ok

CONTINUE = "https://app.example.com/finish"

# The worker's crash bound, set as Tests/integration/test_crash_bounds.py sets it: at most
# worker.unrecordedPerConnection sends per SMTP connection are unrecorded when a worker dies, so a SIGKILL
# may duplicate at most UNRECORDED x CONNECTIONS messages (README, "A worker dies").
CONNECTIONS = 4
UNRECORDED = 2
IN_FLIGHT = UNRECORDED * CONNECTIONS

BULK = 10_000
API_REQUESTS = 1_000
API_THREADS = 50
WORKERS = 3
KILL_AT = 2_500  # accepted messages when one worker is SIGKILLed
# Answers under load, on CI's two cores with a debug build, take seconds at the tail: the 1,000 requests beside
# the bulk send, three workers and PostgreSQL (measured up to 8 s), and 50 simultaneous resetPasswords, each
# hashing its new password (up to 9-10 s across two nodes; 4-5 s on one SQLite node). More than the suite's
# usual HTTP_TIMEOUT, which is for one request at a time.
LOAD_TIMEOUT = 30


def ledger_settings(postgres, tmp_path, capture=None, **extra) -> dict:
    """Config overrides every process of a test shares: the ledger, one signing-key file for both API nodes
    (its default lies beside database.path, which differs per node) and, given `capture`, the one relay."""
    settings: dict = {
        "database": {"url": postgres.url},
        "tokens": {"keyFile": str(tmp_path / "signing-keys.json")},
        "worker": {"unrecordedPerConnection": UNRECORDED, "pollInterval": "100ms"},
        "smtp": {"connections": CONNECTIONS},
    }
    if capture is not None:
        settings["smtp"]["url"] = f"smtp://127.0.0.1:{capture.port}"
    return deep_merge(settings, extra)


def message_id(value) -> str:
    return "".join(str(value or "").split()).strip("<>")  # unfolded, without the angle brackets


def receptions(jsonl) -> list:
    """The capture server's --jsonl records, in acceptance order, each with its `message_id` read from the raw
    header (parsing 11,000 whole messages, as CaptureServer.messages() does, takes half a minute)."""
    out = []
    for line in jsonl.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        raw = base64.b64decode(record.pop("data_b64"))
        record["message_id"] = message_id(raw_header(raw, "Message-ID").decode("ascii"))
        out.append(record)
    return out


# --------------------------------------------------------------------------- 1
def test_three_workers_and_two_api_nodes_deliver_everything_once_a_worker_is_killed(
        postgres, server, herald, start_capture, tmp_path):
    capture_log = tmp_path / "capture.jsonl"
    capture = start_capture(jsonl=capture_log)
    settings = ledger_settings(postgres, tmp_path, capture)
    nodes = [server("--no-worker", **settings), server("--no-worker", **settings)]
    config = nodes[0].config  # the same ledger, relay and worker settings for the CLI and the workers

    workers = [herald.start("worker", config=config, name=f"worker{i}") for i in range(WORKERS)]
    bulk = [f"bulk{i:05d}@x.test" for i in range(BULK)]
    api = [f"api{i:04d}@x.test" for i in range(API_REQUESTS)]
    recipients_file = write_recipients(tmp_path, bulk)
    started = time.monotonic()

    def queue_bulk():
        result = herald("send", "sign-in", "--recipients", recipients_file, "--continue-url", CONTINUE,
                        config=config, timeout=150)
        return result, time.monotonic() - started

    def request(i: int) -> tuple:
        """(status, body) of one client sendOobCode; only that is kept: a kept Response keeps its socket open,
        and 128 open connections from one client are refused (server.maxConnectionsPerClient)."""
        body = {"requestType": "EMAIL_SIGNIN", "email": api[i], "continueUrl": CONTINUE, "canHandleCodeInApp": True}
        try:
            resp = requests.post(f"{nodes[i % 2].url}/v1/accounts:sendOobCode", params={"key": API_KEY}, json=body,
                                 timeout=LOAD_TIMEOUT)
        except requests.RequestException as exc:
            return None, repr(exc)
        return resp.status_code, resp.text

    with ThreadPoolExecutor(API_THREADS + 1) as pool:
        bulk_run = pool.submit(queue_bulk)
        calls = [pool.submit(request, i) for i in range(API_REQUESTS)]
        # Mid-run, with API requests still arriving: the other workers keep sending, and the victim's rows must
        # come back to them (its PID is gone) without waiting for the 30-minute lease.
        kill_when_received(workers[0].proc, capture, KILL_AT, timeout=150)
        killed_at, killed = time.time(), time.monotonic() - started
        answers = [call.result(timeout=150) for call in calls]
        api_done = time.monotonic() - started
        bulk_result, bulk_done = bulk_run.result(timeout=150)

    assert bulk_result.stdout.strip() == f"queued {BULK} message(s)", bulk_result.stdout
    # Every request must be acknowledged (asserted last, so that a failure also shows what became of the rest).
    refused = [(api[i], status, text[:300]) for i, (status, text) in enumerate(answers) if status != 200]
    acknowledged = [api[i] for i, (status, text) in enumerate(answers) if status == 200]
    for i, (status, text) in enumerate(answers):
        if status == 200:
            assert json.loads(text).get("email") == api[i], text

    total = BULK + len(acknowledged)

    def all_sent():
        states = postgres.states()
        stuck = {s: n for s, n in states.items() if s in ("failed", "dead", "expired", "cancelled")}
        assert not stuck, f"rows ended {stuck} (ledger {states})"
        return states if states == {"sent": total} else None

    wait_until(all_sent, timeout=150, what=f"all {total} rows 'sent' (ledger {postgres.states()})", interval=1)
    drained = time.monotonic() - started
    for worker in workers[1:]:
        assert worker.proc.poll() is None, f"a surviving worker exited\n{worker.stderr()}"
        worker.signal(signal.SIGTERM)
    for worker in workers[1:]:
        assert worker.wait(timeout=30) == 0, worker.stderr()
        assert not [line for line in worker.stderr().splitlines() if line.startswith("error: ")], worker.stderr()

    # The outbox tallies the metrics read, kept by triggers through 1,000 concurrent requests, three workers and a
    # SIGKILL mid-batch, equal the rows counted one by one.
    assert postgres.tallies() == postgres.recount(), (postgres.tallies(), postgres.recount())

    # Every row of the ledger: its Message-ID reached the relay, to its recipient.
    rows = herald.messages(config)
    assert len(rows) == total, f"{len(rows)} outbox rows for {total} acknowledged messages"
    assert sorted(r["recipient"] for r in rows) == sorted(bulk + acknowledged)
    assert {r["state"] for r in rows} == {"sent"}
    by_id = {message_id(r["messageId"]): r for r in rows}
    assert len(by_id) == total, "Message-IDs are not unique per outbox row"

    captured = receptions(capture_log)
    seen: dict = {}
    for index, m in enumerate(captured):
        mid = m["message_id"]
        seen.setdefault(mid, []).append(index)
        row = by_id.get(mid)
        assert row is not None, f"delivered a Message-ID the ledger does not hold: {mid} to {m['rcpt_tos']}"
        assert [r.lower() for r in m["rcpt_tos"]] == [row["recipient"]], (mid, m["rcpt_tos"], row["recipient"])
    missing = sorted(set(by_id) - set(seen))
    assert not missing, f"{len(missing)} queued rows never delivered, e.g. {[by_id[m]['recipient'] for m in missing[:5]]}"

    # Duplicates: only rows the dead worker had started (charged an `interrupted` attempt), first received
    # before the kill and again after it, and no more than its unrecorded sends.
    interrupted = {message_id(r["message_id"]): r["n"] for r in postgres.query(
        "SELECT o.message_id, count(*) AS n FROM delivery_attempts a JOIN outbox o ON o.id = a.outbox_id "
        "WHERE a.outcome = 'interrupted' GROUP BY o.message_id")}
    duplicates = {mid: idx for mid, idx in seen.items() if len(idx) > 1}
    repeats = sum(len(idx) - 1 for idx in duplicates.values())
    print(f"{total} rows: `send --recipients` done at {bulk_done:.1f}s, {len(acknowledged)}/{API_REQUESTS} API "
          f"requests acknowledged by {api_done:.1f}s, a worker killed at {killed:.1f}s ({KILL_AT} accepted), all sent "
          f"at {drained:.1f}s; {repeats} duplicate deliveries of {len(duplicates)} rows; "
          f"{sum(interrupted.values())} interrupted attempts on {len(interrupted)} rows")
    assert interrupted, "the SIGKILL caught no send in flight: nothing was charged an interrupted attempt"
    for mid, idx in duplicates.items():
        first, again = captured[idx[0]], captured[idx[1]]
        assert interrupted.get(mid, 0) >= len(idx) - 1, (
            f"{by_id[mid]['recipient']} delivered {len(idx)} times but charged {interrupted.get(mid, 0)} "
            "interrupted attempts: a duplicate outside the killed worker's in-flight sends")
        assert first["received_at"] <= killed_at + 1 and again["received_at"] > killed_at, (
            f"{by_id[mid]['recipient']} received at {first['received_at']:.3f} and {again['received_at']:.3f}, "
            f"not across the kill at {killed_at:.3f}")
    assert repeats <= IN_FLIGHT, (
        f"{repeats} duplicate deliveries: one SIGKILL may repeat at most {IN_FLIGHT} "
        f"({UNRECORDED} unrecorded sends x {CONNECTIONS} connections)")
    assert len(interrupted) <= IN_FLIGHT and sum(interrupted.values()) <= IN_FLIGHT, (
        f"interrupted attempts {sum(interrupted.values())} on {len(interrupted)} rows: only the dead worker's "
        f"started sends (at most {IN_FLIGHT}) are charged")
    for row in rows:
        charged = interrupted.get(message_id(row["messageId"]), 0)
        assert row["attempts"] <= 1 + charged, (
            f"{row['recipient']}: {row['attempts']} attempts, {charged} interrupted: a row the dead worker never "
            "started returns with its attempt count unchanged")
    for node in nodes:
        assert node.running, f"an API node died\n{node.describe()}"
    assert not refused, (
        f"{len(refused)} of {API_REQUESTS} API requests (50 at a time, beside the bulk send and the workers) were "
        f"not acknowledged: {refused[:5]}")


# --------------------------------------------------------------------------- 2
PASSWORD = "first-password-1"


def test_fifty_concurrent_redemptions_across_two_nodes_one_wins(postgres, server, tmp_path):
    settings = ledger_settings(postgres, tmp_path)
    a, b = server("--no-worker", **settings), server("--no-worker", **settings)
    email = "racer@x.test"
    a.sign_up(email, PASSWORD)
    code = b.oob("PASSWORD_RESET", email)["oobCode"]
    ok(a.post("accounts:resetPassword", {"oobCode": code}))  # inspecting does not consume

    gate = threading.Barrier(50)

    def redeem(i: int) -> requests.Response:
        node = (a, b)[i % 2]
        gate.wait(timeout=30)
        return requests.post(f"{node.url}/v1/accounts:resetPassword", params={"key": API_KEY},
                             json={"oobCode": code, "newPassword": f"racer-{i:02d}-pw"}, timeout=LOAD_TIMEOUT)

    with ThreadPoolExecutor(50) as pool:
        results = list(pool.map(redeem, range(50)))
    winners = [i for i, r in enumerate(results) if r.status_code == 200]
    assert len(winners) == 1, f"expected exactly one 200, got statuses {sorted(r.status_code for r in results)}"
    for i, r in enumerate(results):
        if i != winners[0]:
            assert_error(r, "INVALID_OOB_CODE")
    for node in (a, b):
        ok(node.sign_in(email, f"racer-{winners[0]:02d}-pw"))
        assert_error(node.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")
    redeemed = postgres.query("SELECT kind FROM link_events WHERE kind = 'redeemed'")
    assert len(redeemed) == 1, redeemed


# --------------------------------------------------------------------------- 3
def test_migrate_from_sqlite_copies_the_ledger_into_postgres(postgres, server, herald, capture, tmp_path, db):
    sqlite_config = write_config(tmp_path, capture, name="sqlite.yaml", accounts={"owner": "herald"})
    users = tmp_path / "users.csv"
    users.write_text("email,password,displayName,emailVerified\nada@x.test,correct-horse-1,Ada,false\n",
                     encoding="utf-8")
    herald("accounts", "import", users, config=sqlite_config)
    herald.send("verify-email", "ada@x.test", config=sqlite_config)
    herald.send("reset-password", "ada@x.test", config=sqlite_config)
    herald.send("sign-in", "bob@x.test", "--continue-url", CONTINUE, config=sqlite_config)
    herald.worker_until_empty(sqlite_config)
    messages = herald.messages(sqlite_config)
    accounts = herald("accounts", "list", "--json", config=sqlite_config).stdout
    assert [m["state"] for m in messages] == ["sent"] * 3

    pg_config = write_config(tmp_path, capture, name="pg.yaml", database={"url": postgres.url},
                             accounts={"owner": "herald"})
    # A mistyped path is one error line, not a new empty ledger copied "successfully".
    typo = tmp_path / "herald.sqlite-typo"
    assert_one_error_line(herald("migrate", "--from", f"sqlite:{typo}", config=pg_config, check=False), "no such file")
    assert not typo.exists()
    result = herald("migrate", "--from", f"sqlite:{db}", config=pg_config)
    lines = result.stdout.splitlines()
    assert "outbox: 3 rows" in lines and "accounts: 1 rows" in lines, result.stdout
    assert lines[-1].startswith("copied ") and f"from {db} into {postgres.url}" in lines[-1], result.stdout
    assert "every table's count matches" in lines[-1], result.stdout

    assert herald.messages(pg_config) == messages
    assert herald("accounts", "list", "--json", config=pg_config).stdout == accounts
    assert postgres.states() == {"sent": 3}

    # The copy is a working ledger: a server on it knows Ada's password and the reset code mailed from SQLite.
    srv = server("--no-worker", **ledger_settings(postgres, tmp_path, accounts={"owner": "herald"}))
    ok(srv.sign_in("ada@x.test", "correct-horse-1"))
    reset = [m for m in by_recipient(capture.messages())["ada@x.test"] if "mode=resetPassword" in action_link(m["message"])]
    assert len(reset) == 1
    body = ok(srv.post("accounts:resetPassword", {"oobCode": code_of(action_link(reset[0]["message"]))}))
    assert body["email"] == "ada@x.test" and body["requestType"] == "PASSWORD_RESET", body


# --------------------------------------------------------------------------- 4
def test_a_bad_database_url_stops_migrate_with_one_line(postgres, herald, tmp_path):
    server_url = postgres.base_url  # postgres://user@host:port/db
    user_host, _, database = server_url[len("postgres://"):].partition("/")
    user, _, hostport = user_host.partition("@")
    cases = [
        ("postgres://nobody@127.0.0.1:1/x", ["postgres://nobody@127.0.0.1:1/x"]),  # nothing listens
        (f"postgres://{user}:s3cret@{hostport}/{database}", ["HERALD_DATABASE_PASSWORD"]),
        (f"postgres://{user}@{hostport}/no_such_database", ["no_such_database"]),
        (f"postgres://no_such_role@{hostport}/{database}", ["no_such_role"]),
        (f"{server_url}?schema=Not-A-Schema", ["schema"]),
        ("mysql://root@127.0.0.1/x", ["database.url"]),
    ]
    for n, (url, needles) in enumerate(cases):
        config = write_config(tmp_path, name=f"bad{n}.yaml", database={"url": url})
        result = herald("migrate", config=config, check=False, timeout=60)
        line = assert_one_error_line(result, *needles)
        assert "s3cret" not in line and "s3cret" not in result.stdout, line
        assert "Traceback" not in result.stderr and "Fatal error" not in result.stderr, result.stderr
    # The same from the environment (HERALD_DATABASE_URL overrides database.url).
    config = write_config(tmp_path, name="good.yaml")
    result = herald("migrate", config=config, check=False, env={"HERALD_DATABASE_URL": "postgres://nobody@127.0.0.1:1/x"})
    assert_one_error_line(result, "postgres://nobody@127.0.0.1:1/x")


# --------------------------------------------------------------------------- 5
RATE = 20  # worker.maxRate: messages per second for all workers together
RATED = 60


def test_worker_max_rate_is_one_cap_for_every_worker_process(postgres, herald, start_capture, tmp_path):
    capture_log = tmp_path / "rated.jsonl"
    capture = start_capture(jsonl=capture_log)
    # Small claims, so that both workers hold and send rows throughout instead of one claiming them all.
    config = write_config(tmp_path, capture, name="rated.yaml", database={"url": postgres.url},
                          worker={"maxRate": RATE, "batchSize": 4, "pollInterval": "100ms"})
    recipients = write_recipients(tmp_path, [f"rated{i:03d}@x.test" for i in range(RATED)])
    herald("send", "sign-in", "--recipients", recipients, "--continue-url", CONTINUE, config=config)
    workers = [herald.start("worker", config=config, name=f"rated{i}") for i in range(2)]
    wait_until(lambda: postgres.states() == {"sent": RATED}, timeout=60, what=f"{RATED} rows sent", interval=0.2)
    for worker in workers:
        worker.signal(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(timeout=30) == 0, worker.stderr()

    senders = postgres.query("SELECT DISTINCT split_part(claimed_by, '/', 1) AS worker FROM outbox")
    assert len(senders) == 2, f"the test needs both workers sending, and rows were sent by {senders}"
    times = sorted(r["received_at"] for r in receptions(capture_log))
    assert len(times) == RATED, f"{len(times)} messages received for {RATED} rows"
    span = times[-1] - times[0]
    # One cap for both: 60 sends at 20/s span at least 59/20 = 2.95 s (slots are reserved 100 ms at a time, so a
    # little less at the edges); two caps of their own would let the pair finish in half that.
    assert span >= (RATED - 1) / RATE - 0.5, f"{RATED} messages in {span:.2f} s: faster than one cap of {RATE}/s"
    print(f"{RATED} messages in {span:.2f} s by 2 workers at maxRate {RATE}")


# --------------------------------------------------------------------------- 6
def test_a_silent_worker_on_another_host_is_given_up_after_the_heartbeat_timeout(postgres, herald, capture, tmp_path):
    """A dead worker on this host is noticed by its vanished PID; one on another host only by its heartbeat. The
    ghost here is such a worker (another host's name, a heartbeat a minute old) holding six rows on one connection
    with a bound of two, as a crash would leave them."""
    config = write_config(tmp_path, capture, name="ghost.yaml", database={"url": postgres.url},
                          worker={"heartbeatTimeout": "2s", "pollInterval": "100ms"})
    recipients = write_recipients(tmp_path, [f"ghost{i}@x.test" for i in range(6)])
    herald("send", "verify-email", "--recipients", recipients, "--continue-url", CONTINUE, config=config)
    postgres.execute(
        "INSERT INTO workers (id, host, pid, started_at, heartbeat_at) VALUES "
        "('ghost', 'another-host.internal', 4242, "
        "(extract(epoch FROM now()) * 1000)::bigint - 120000, (extract(epoch FROM now()) * 1000)::bigint - 60000);"
        "UPDATE outbox SET state = 'sending', attempts = attempts + 1, claimed_by = 'ghost/0:2', "
        "lease_until = (extract(epoch FROM now()) * 1000)::bigint + 600000")
    assert postgres.states() == {"sending": 6}

    started = time.monotonic()
    worker = herald.start("worker", config=config, name="sweeper")
    wait_until(lambda: postgres.states() == {"sent": 6}, timeout=60, what="the ghost's rows sent", interval=0.2)
    elapsed = time.monotonic() - started
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, worker.stderr()
    assert elapsed < 30, f"the rows waited {elapsed:.1f} s: for their 10-minute lease rather than the 2 s heartbeat timeout"
    assert "worker ghost died (no heartbeat for" in worker.stderr(), worker.stderr()

    charged = postgres.query("SELECT outbox_id FROM delivery_attempts WHERE outcome = 'interrupted' ORDER BY outbox_id")
    assert len(charged) == 2, f"the ghost's bound is 2 unrecorded sends on its one connection: {charged}"
    assert postgres.query("SELECT stopped_at IS NOT NULL AS stopped FROM workers WHERE id = 'ghost'") == [{"stopped": True}]
    assert sorted(m["rcpt_tos"][0] for m in capture.messages()) == sorted(f"ghost{i}@x.test" for i in range(6))

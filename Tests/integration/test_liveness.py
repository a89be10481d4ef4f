"""A live worker is never given up for dead, and a stepped wall clock does not stop sending (issue #44).

* Two workers on one SQLite ledger; one is paused (SIGSTOP) for 40 s, longer than `worker.heartbeatTimeout` (the
  default, 30 s), while it holds claimed rows. On one host a worker is judged by its PID alone: the other worker must
  not take its rows, and once resumed it sends them itself: every row delivered once, no "died" line, no
  `interrupted` attempt.
* A worker whose wall clock steps back 600 s mid-send (libfaketime, `FAKETIME_TIMESTAMP_FILE` rewritten while it
  runs; its monotonic clock untouched, as with an NTP step) keeps sending, and rows queued afterwards with the real
  clock are delivered within 10 s.
* The same for a step of +60 s with two workers: the stepped one must not give the other up for dead.

The clock tests need libfaketime (Debian's `libfaketime` package) and are skipped, saying so, without it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from helpers import by_recipient, query, wait_until, write_config, write_recipients

CONTINUE = "https://app.example.com/finish"
DIED = " died ("  # the line a worker logs when it gives another up for dead
FAKETIME_LIBS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                 "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def queue(herald, config, tmp_path: Path, addresses: list, name: str) -> None:
    recipients = write_recipients(tmp_path, addresses, name=name)
    result = herald("send", "sign-in", "--recipients", recipients, "--continue-url", CONTINUE, config=config)
    assert result.stdout.strip() == f"queued {len(addresses)} message(s)", result.stdout


def states(db) -> dict:
    return {r["state"]: r["n"] for r in query(db, "SELECT state, count(*) AS n FROM outbox GROUP BY state")}


def registered(db) -> dict:
    """{pid: worker id} of the workers the ledger counts alive."""
    return {r["pid"]: r["id"] for r in query(db, "SELECT id, pid FROM workers WHERE stopped_at IS NULL")}


def held_by(db, worker_id: str) -> list:
    """Outbox ids a worker holds (claimed, `sending`)."""
    return [r["id"] for r in query(db, "SELECT id FROM outbox WHERE state = 'sending' AND claimed_by LIKE ? ORDER BY id",
                                   (f"{worker_id}/%",))]


def assert_delivered_once(capture, db, addresses: list) -> dict:
    """Every address received exactly one message; every row `sent`; nothing charged `interrupted`."""
    received = by_recipient(capture.messages())
    missing = sorted(set(addresses) - set(received))
    assert not missing, f"{len(missing)} never delivered, e.g. {missing[:5]}"
    twice = {r: len(m) for r, m in received.items() if len(m) > 1}
    assert not twice, f"{sum(n - 1 for n in twice.values())} duplicate deliveries of {len(twice)} rows: {dict(list(twice.items())[:10])}"
    assert sorted(received) == sorted(addresses), "delivered to addresses never queued"
    assert states(db) == {"sent": len(addresses)}, states(db)
    interrupted = query(db, "SELECT outbox_id FROM delivery_attempts WHERE outcome = 'interrupted'")
    assert not interrupted, f"live workers' rows charged `interrupted`: {interrupted[:10]}"
    return received


def assert_nobody_died(workers) -> None:
    died = [f"worker pid {w.pid}: {line}" for w in workers for line in w.stderr().splitlines() if DIED in line]
    assert not died, "a live worker was given up for dead:\n" + "\n".join(died)


def stop_all(workers) -> None:
    for w in workers:
        assert w.proc.poll() is None, f"worker {w.pid} exited ({w.proc.returncode})\n{w.stderr()}"
        w.signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(timeout=20) == 0, w.stderr()


# --------------------------------------------------------------------------- a paused worker
PAUSE_ROWS = 1500
PAUSE_SECONDS = 40


def test_a_worker_paused_longer_than_the_heartbeat_timeout_is_not_given_up_for_dead(
        herald, start_capture, tmp_path, db):
    # The relay as is: each worker sends about 20 a second on its one connection (debug build, two cores), so the
    # 1,500 rows outlast the pause and the run takes about 55 s.
    capture = start_capture()
    # worker.heartbeatTimeout stays at its default (30 s): shorter than the pause, so a judge by heartbeat age would
    # give the paused worker up. The crash bound is 2 per connection, so a wrong verdict shows as duplicates.
    config = write_config(tmp_path, capture, worker={"unrecordedPerConnection": 2, "pollInterval": "100ms"})
    addresses = [f"pause{i:04d}@x.test" for i in range(PAUSE_ROWS)]
    queue(herald, config, tmp_path, addresses, "pause.txt")
    workers = [herald.start("worker", config=config, name=f"worker{i}") for i in range(2)]
    paused, other = workers

    def holding():
        ids = registered(db)
        wid = ids.get(paused.pid)
        return wid and len(ids) == 2 and capture.received_count >= 20 and held_by(db, wid) and wid

    for attempt in range(5):
        wid = wait_until(holding, timeout=30, what="both workers registered and the first holding rows", interval=0.1)
        paused.signal(signal.SIGSTOP)
        stopped_at = time.time()
        held = held_by(db, wid)  # stable now: only the paused worker could send or release them
        if held:
            break
        paused.signal(signal.SIGCONT)  # it let go of its last claim just before the stop: again
        time.sleep(0.2)
    try:
        assert held, "the paused worker held no rows at five stops: the test could not tell a wrong verdict"
        time.sleep(PAUSE_SECONDS)
        assert other.proc.poll() is None, f"the other worker exited\n{other.stderr()}"
    finally:
        paused.signal(signal.SIGCONT)
    resumed_at = time.time()
    print(f"paused worker {paused.pid} ({wid}) for {PAUSE_SECONDS}s holding {len(held)} rows; "
          f"{capture.received_count} received at the resume")

    wait_until(lambda: states(db) == {"sent": PAUSE_ROWS}, timeout=60,
               what=f"all {PAUSE_ROWS} rows sent (ledger {states(db)})", interval=0.5)
    stop_all(workers)
    assert_nobody_died(workers)
    received = assert_delivered_once(capture, db, addresses)
    # The paused worker's rows waited for it: none was delivered while it was stopped.
    rows = {r["id"]: r["recipient"] for r in query(db, "SELECT id, recipient FROM outbox")}
    early = [rows[i] for i in held if stopped_at + 0.5 < received[rows[i]][0]["received_at"] < resumed_at]
    assert not early, f"rows the paused worker held were delivered by another while it was stopped: {early[:10]}"


# --------------------------------------------------------------------------- stepped clocks
def faketime_library() -> str:
    for lib in FAKETIME_LIBS:
        if os.path.exists(lib):
            return lib
    pytest.skip("libfaketime is not installed (Debian package `libfaketime`, "
                f"{FAKETIME_LIBS[-1]}): the wall-clock step tests need it")


class SteppedClock:
    """A wall clock for one herald process, offset by the contents of a file the test rewrites while it runs
    (libfaketime reads it at every call, FAKETIME_NO_CACHE); the monotonic clock is left alone, as an NTP step
    leaves it."""

    def __init__(self, tmp_path: Path, name: str = "faketime.rc") -> None:
        self.lib = faketime_library()
        self.file = Path(tmp_path) / name
        self.pids: list = []
        self.set("+0")

    def set(self, offset: str) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(offset + "\n", encoding="utf-8")
        os.replace(tmp, self.file)  # atomic: the library never reads half a file

    @property
    def env(self) -> dict:
        # FAKETIME_FORCE_MONOTONIC_FIX=0: with FAKETIME_DONT_FAKE_MONOTONIC, libfaketime 0.9.10's "monotonic fix"
        # makes every pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable (Herald's MonotonicCondition)
        # time out at once, which no real clock step does; without the fix such waits last as long as they should.
        return {"LD_PRELOAD": self.lib, "FAKETIME_TIMESTAMP_FILE": str(self.file), "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}

    def start(self, herald, *args, config: Path, name: str):
        """`herald ARGS` on this clock, through `sh -c exec` (the same PID). Why the shell: libfaketime's
        constructor exports FAKETIME_SHARED (setenv moves `environ`), and the Swift runtime finds argv by walking back
        from `environ`, so a herald preloaded directly sees no arguments; the preloaded shell exports it instead and
        herald, inheriting it, leaves `environ` alone."""
        wrapper = self.file.with_name("herald-on-faketime.sh")
        wrapper.write_text(f'#!/bin/sh\nexec {herald.binary} "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)
        real, herald.binary = herald.binary, wrapper
        try:
            bg = herald.start(*args, config=config, env=self.env, name=name)
        finally:
            herald.binary = real
        self.pids.append(bg.pid)
        return bg

    def cleanup(self) -> None:
        """libfaketime's shared memory of each process (named by the PID; it outlives the process)."""
        for pid in self.pids:
            for name in (f"faketime_shm_{pid}", f"sem.faketime_sem_{pid}"):
                Path("/dev/shm", name).unlink(missing_ok=True)


@pytest.fixture
def stepped_clock(tmp_path):
    """A SteppedClock for the test (skipped without libfaketime); its shared memory removed afterwards."""
    clock = SteppedClock(tmp_path)
    yield clock
    clock.cleanup()


def heartbeat_offset(db, pid: int) -> float:
    """How far (s) a worker's last heartbeat lies from our clock; on SQLite it is written by the worker's clock."""
    rows = query(db, "SELECT heartbeat_at FROM workers WHERE pid = ? AND stopped_at IS NULL", (pid,))
    return rows[0]["heartbeat_at"] / 1000 - time.time() if rows else float("nan")


STEP_ROWS = 60
LATE_ROWS = 10
LATE_WITHIN = 10  # seconds from queueing to delivery, for rows queued with the real clock after the step
# Claims of 10 rows: at the step most of the queue is still unclaimed, and must be found due by the stepped clock.
STEP_WORKER = {"unrecordedPerConnection": 2, "pollInterval": "100ms", "batchSize": 10}


def test_a_worker_whose_clock_steps_back_600_s_mid_send_keeps_sending(
        herald, stepped_clock, start_capture, tmp_path, db):
    clock = stepped_clock
    capture = start_capture(delay=0.02)
    config = write_config(tmp_path, capture, worker=STEP_WORKER)
    addresses = [f"back{i:03d}@x.test" for i in range(STEP_ROWS)]
    queue(herald, config, tmp_path, addresses, "back.txt")
    worker = clock.start(herald, "worker", config=config, name="stepped")
    wait_until(lambda: capture.received_count >= 15 or worker.proc.poll() is not None, timeout=30,
               what="15 messages received")
    assert worker.proc.poll() is None, worker.stderr()
    clock.set("-600")  # mid-send: the worker holds claimed rows, some in flight
    stepped = time.monotonic()
    at_step = capture.received_count
    # The step took: the worker's next heartbeat (every 5 s) is written ~600 s in the past.
    wait_until(lambda: heartbeat_offset(db, worker.pid) < -500, timeout=15,
               what="the worker's heartbeat to show its clock 600 s back")
    late = [f"late{i:02d}@x.test" for i in range(LATE_ROWS)]
    queue(herald, config, tmp_path, late, "late.txt")  # with the real clock
    queued = time.monotonic()
    try:
        wait_until(lambda: all(a in by_recipient(capture.messages()) for a in late), timeout=LATE_WITHIN,
                   what=f"the {LATE_ROWS} rows queued after the step delivered", interval=0.1)
    except AssertionError:
        pytest.fail(f"{LATE_WITHIN}s after queueing {LATE_ROWS} rows, the worker whose clock stepped back 600 s had "
                    f"delivered {capture.received_count - at_step} message(s) since the step ({capture.received_count} "
                    f"of {STEP_ROWS + LATE_ROWS} in all; ledger {states(db)})\n{worker.stderr()}")
    print(f"step at {at_step} received; late rows delivered {time.monotonic() - queued:.1f}s after queueing "
          f"({time.monotonic() - stepped:.1f}s after the step)")
    wait_until(lambda: states(db) == {"sent": STEP_ROWS + LATE_ROWS}, timeout=20,
               what=f"every row sent (ledger {states(db)})", interval=0.2)
    stop_all([worker])
    assert_delivered_once(capture, db, addresses + late)


PLUS_ROWS = 120


def test_a_worker_whose_clock_steps_forward_60_s_gives_no_live_worker_up(
        herald, stepped_clock, start_capture, tmp_path, db):
    clock = stepped_clock
    capture = start_capture(delay=0.02)
    config = write_config(tmp_path, capture, worker=STEP_WORKER)
    addresses = [f"ahead{i:03d}@x.test" for i in range(PLUS_ROWS)]
    queue(herald, config, tmp_path, addresses, "ahead.txt")
    stepped = clock.start(herald, "worker", config=config, name="stepped")
    steady = herald.start("worker", config=config, name="steady")
    workers = [stepped, steady]
    wait_until(lambda: len(registered(db)) == 2 and capture.received_count >= 30, timeout=30,
               what="both workers registered and 30 messages received")
    for w in workers:
        assert w.proc.poll() is None, w.stderr()
    clock.set("+60")
    at_step = capture.received_count
    wait_until(lambda: heartbeat_offset(db, stepped.pid) > 50, timeout=15,
               what="the stepped worker's heartbeat to show its clock 60 s ahead")
    late = [f"late{i:02d}@x.test" for i in range(LATE_ROWS)]
    queue(herald, config, tmp_path, late, "late.txt")
    queued = time.monotonic()
    wait_until(lambda: all(a in by_recipient(capture.messages()) for a in late), timeout=LATE_WITHIN,
               what=f"the {LATE_ROWS} rows queued after the step delivered", interval=0.1)
    print(f"step at {at_step} received; late rows delivered {time.monotonic() - queued:.1f}s after queueing")
    # Two more beats of the stepped worker (every 5 s), each followed by its sweep of the others: the steady worker's
    # heartbeat looks 60 s old to it, twice the heartbeat timeout.
    beats_after = time.monotonic() + 11
    wait_until(lambda: states(db) == {"sent": PLUS_ROWS + LATE_ROWS} and time.monotonic() > beats_after, timeout=60,
               what=f"every row sent and two beats after the step (ledger {states(db)})", interval=0.5)
    assert len(registered(db)) == 2, f"a live worker was marked stopped: {query(db, 'SELECT * FROM workers')}"
    stop_all(workers)
    assert_nobody_died(workers)
    assert_delivered_once(capture, db, addresses + late)

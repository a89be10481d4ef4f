#!/usr/bin/env python3
"""Resilience figures for README's *Crash semantics*: relay outage, SIGKILLs, ledger faults.

Not a test: nothing here asserts. Every scenario runs the real `herald` binary in a temporary
directory against the repository's capture SMTP server (Tests/support/smtp_server.py) and the
real SQLite ledger, measures, and ends within a bounded time; a scenario that goes wrong (a
worker that dies, a timeout) reports what it saw and the run goes on. Prints a Markdown table,
the problems noticed, and the exact command line.

  1. relay outage: N verify-email messages, the relay refusing connections for OUTAGE s after
     the worker's first refusal, default connection backoff (1 s doubling to 60 s);
  2. duplicates per crash: SIGKILL the worker right after the k-th accepted message, KILLS
     times, restarting it each time, then `worker --until-empty`;
  3. storage: (a) another process holds SQLite's write lock 12 s (busyTimeout 10 s);
     (b) the ledger's 8 MiB tmpfs full for 5 s (needs root; skipped with a note otherwise).

Usage: python3 scripts/resilience.py [--herald .build/debug/herald] [--quick] [--only 1,2,3a,3b]
Run one at a time: the timings assume nothing else herald-heavy is running.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[1]
for sub in ("Tests/support", "Tests/integration"):
    if str(REPO / sub) not in sys.path:
        sys.path.insert(0, str(REPO / sub))

from smtp_server import CaptureServer  # noqa: E402
from helpers import (  # noqa: E402  (the integration suite's config shape and ledger helpers)
    WriteLock, duplicates_by_crash, fill_filesystem, free_bytes, herald_env, integrity_check, query, unmount, write_config,
    wait_until, write_recipients,
)

UNAVAILABLE = "ledger unavailable"
RECOVERED = "ledger available again"


class ScenarioFailed(Exception):
    """The scenario could not go on (timeout, a command failed); its figures so far are kept."""


# --------------------------------------------------------------------------- processes
class Worker:
    """A background `herald worker` whose output goes to files; killed only by its own PID."""

    def __init__(self, argv: list, cwd: Path, name: str) -> None:
        self.argv = argv
        self.out, self.err = cwd / f"{name}.stdout", cwd / f"{name}.stderr"
        with open(self.out, "wb") as fo, open(self.err, "wb") as fe:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=herald_env(), stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return self.err.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self, timeout: float = 30) -> Optional[int]:
        """SIGTERM, wait; the exit code, or None if it had to be killed."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def wait(self, timeout: float) -> Optional[int]:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def tail(self, lines: int = 5) -> str:
        return " | ".join(self.stderr().strip().splitlines()[-lines:])


class Herald:
    def __init__(self, binary: Path, cwd: Path) -> None:
        self.binary, self.cwd = binary, Path(cwd)
        self.workers: list = []

    def argv(self, args, config: Path) -> list:
        return [str(self.binary), *map(str, args), "--config", str(config)]

    def run(self, *args, config: Path, timeout: float = 120) -> str:
        argv = self.argv(args, config)
        try:
            result = subprocess.run(argv, cwd=self.cwd, env=herald_env(), stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ScenarioFailed(f"`{shlex.join(argv[1:])}` took over {timeout:g}s")
        if result.returncode != 0:
            raise ScenarioFailed(f"`{shlex.join(argv[1:])}` exited {result.returncode}: {result.stderr.strip()[-500:]}")
        return result.stdout

    def start(self, *args, config: Path, name: str) -> Worker:
        worker = Worker(self.argv(args, config), self.cwd, f"{name}-{len(self.workers) + 1}")
        self.workers.append(worker)
        return worker

    def cleanup(self) -> None:
        for worker in self.workers:
            worker.kill()


def queue_bulk(herald: Herald, config: Path, tmp: Path, prefix: str, count: int) -> list:
    recipients = [f"{prefix}{i:05d}@x.test" for i in range(count)]
    out = herald.run("send", "verify-email", "--recipients", write_recipients(tmp, recipients), config=config)
    if f"queued {count} message(s)" not in out:
        raise ScenarioFailed(f"`send --recipients` with {count} addresses printed {out.strip()!r}")
    return recipients


# --------------------------------------------------------------------------- measuring
def poll(predicate: Callable, timeout: float, interval: float = 0.05):
    """predicate() until truthy; its value, or None after `timeout` s (the suite's wait_until, which raises)."""
    try:
        return wait_until(predicate, timeout, "a scenario's condition", interval)
    except AssertionError:
        return None


def hold(seconds: float, worker: Worker) -> Optional[float]:
    """Sleep `seconds` while watching the worker; the time into the hold at which it exited, else None."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if not worker.alive():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


def receptions(capture: CaptureServer) -> dict:
    """{recipient: [acceptance index, ...]} in acceptance order."""
    out: dict = {}
    for index, message in enumerate(capture.messages()):
        for rcpt in message["rcpt_tos"]:
            out.setdefault(rcpt.lower(), []).append(index)
    return out


def received_times(capture: CaptureServer) -> list:
    return [m["received_at"] for m in capture.messages()]


def count(db: Path, sql: str, params: tuple = ()) -> int:
    rows = query(db, sql, params)
    return int(next(iter(rows[0].values())) or 0) if rows else 0


def sent_rows(db: Path) -> int:
    return count(db, "SELECT count(*) FROM outbox WHERE state = 'sent'")


def all_sent(db: Path, total: int) -> bool:
    return sent_rows(db) >= total


def next_after(capture: CaptureServer, db: Path, t0: float, received_before: int, sent_before: int,
               timeout: float) -> tuple:
    """After an event at wall time t0 (when the relay had accepted `received_before` messages and the
    ledger showed `sent_before` sent rows): (seconds to the next message the relay accepted, seconds
    until the ledger's count of sent rows grew; polled every 0.1 s); None for what never came."""
    relay = ledger = None
    deadline = time.monotonic() + timeout
    while (relay is None or ledger is None) and time.monotonic() < deadline:
        if relay is None and capture.received_count > received_before:
            relay = capture.messages()[received_before]["received_at"] - t0
        if ledger is None and sent_rows(db) > sent_before:
            ledger = time.time() - t0
        time.sleep(0.1)
    return relay, ledger


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


class Report:
    def __init__(self) -> None:
        self.rows: list = []  # (scenario, figure, value)
        self.problems: list = []
        self.notes: list = []

    def add(self, scenario: str, figure: str, value) -> None:
        self.rows.append((scenario, figure, value if isinstance(value, str) else fmt(value)))

    def problem(self, scenario: str, text: str) -> None:
        self.problems.append(f"[{scenario}] {text}")

    def note(self, scenario: str, text: str) -> None:
        self.notes.append(f"[{scenario}] {text}")


def stderr_lines(worker: Worker, needle: str) -> int:
    return sum(1 for line in worker.stderr().splitlines() if needle in line)


def error_lines(worker: Worker) -> list:
    return [line for line in worker.stderr().splitlines()
            if line.startswith("error: ") or re.match(r"^\S+ (error|critical) ", line)]


# --------------------------------------------------------------------------- 1. relay outage
def backoff_refusals(window: float, base: float = 1.0, cap: float = 60.0) -> tuple:
    """Connection attempts that fit in `window` s after the first refusal with pauses
    base*2^(k-1) capped at `cap` and 50-100 % jitter: (fewest, most), counting the first."""
    def fits(factor: float) -> int:
        n, elapsed, k = 1, 0.0, 0
        while True:
            pause = min(cap, base * 2 ** k) * factor
            if elapsed + pause > window:
                return n
            elapsed += pause
            n, k = n + 1, k + 1
    return fits(1.0), fits(0.5)


def relay_outage(herald_bin: Path, report: Report, count_: int, outage: float) -> None:
    S = "1 relay outage"
    with tempfile.TemporaryDirectory(prefix="herald-outage-") as tmp_name:
        tmp = Path(tmp_name)
        herald = Herald(herald_bin, tmp)
        capture = CaptureServer()
        capture.start()
        try:
            config = write_config(tmp, capture)  # smtp.connections 1; connection backoff: defaults 1s / 1m
            db = tmp / "herald.sqlite"
            recipients = queue_bulk(herald, config, tmp, "outage", count_)
            capture.pause_listening()
            worker = herald.start("worker", "--until-empty", config=config, name="worker")
            first = poll(lambda: query(db, "SELECT min(started_at) AS t FROM delivery_attempts "
                                           "WHERE outcome = 'connection'")[0]["t"] or (not worker.alive() and -1), 30, 0.1)
            if first is None or first == -1:
                raise ScenarioFailed(f"no refused connection recorded within 30 s (worker alive: {worker.alive()}; "
                                     f"{worker.tail()})")
            first_refusal = first / 1000
            died = hold(outage - (time.time() - first_refusal), worker)
            if died is not None:
                report.problem(S, f"`worker --until-empty` exited ({worker.proc.returncode}) during the outage: "
                                  f"{worker.tail()}")
            during = query(db, "SELECT state, count(*) AS n, max(attempts) AS a FROM outbox GROUP BY state")
            resumed_at = time.time()
            capture.resume_listening()
            window = resumed_at - first_refusal
            report.add(S, "messages queued", count_)
            report.add(S, "outage from the first refusal (s)", window)

            code = worker.wait(timeout=60 + 2 + count_ / 5)  # one capped pause, then the sends
            if code is None:
                report.problem(S, f"`worker --until-empty` still running {60 + 2 + count_ / 5:.0f}s after the relay "
                                  f"returned; killed. {worker.tail()}")
                worker.kill()
            elif code != 0:
                report.problem(S, f"`worker --until-empty` exited {code}: {worker.tail()}")

            seen = receptions(capture)
            delivered = len(set(recipients) & set(seen))
            duplicates = sum(len(v) - 1 for v in seen.values())
            states = {r["state"]: r["n"] for r in query(db, "SELECT state, count(*) AS n FROM outbox GROUP BY state")}
            multi = count(db, "SELECT count(*) FROM outbox WHERE attempts > 1")
            charged_during = [r for r in during if r["state"] != "sending" and (r["a"] or 0) > 0]
            ended_badly = sum(states.get(s, 0) for s in ("failed", "dead", "expired", "cancelled"))
            conn_rows = count(db, "SELECT count(*) FROM delivery_attempts WHERE outcome = 'connection'")
            refusals = count(db, "SELECT count(DISTINCT started_at) FROM delivery_attempts WHERE outcome = 'connection'")
            refused_before_return = count(db, "SELECT count(DISTINCT started_at) FROM delivery_attempts "
                                              "WHERE outcome = 'connection' AND started_at <= ?", (int(resumed_at * 1000),))
            other = {r["outcome"]: r["n"] for r in query(db, "SELECT outcome, count(*) AS n FROM delivery_attempts "
                                                             "WHERE outcome NOT IN ('connection','sent') GROUP BY outcome")}
            times = received_times(capture)
            lo, hi = backoff_refusals(window)

            report.add(S, "delivered", f"{delivered}/{count_}")
            report.add(S, "duplicate deliveries", duplicates)
            report.add(S, "messages with attempts > 1", multi)
            report.add(S, "failed/dead rows", states.get("failed", 0) + states.get("dead", 0))
            report.add(S, "`connection` attempt rows", conn_rows)
            report.add(S, "refused connection attempts (distinct started_at)",
                       f"{refusals} ({refused_before_return} before the relay returned; backoff allows {lo}–{hi})")
            report.add(S, "relay back → first delivery (s)", min(times) - resumed_at if times else None)
            report.add(S, "relay back → all delivered (s)",
                       max(times) - resumed_at if times and delivered == count_ else None)
            report.add(S, "worker exit code", fmt(code))
            if delivered != count_:
                report.problem(S, f"{count_ - delivered} of {count_} messages never delivered; outbox states {states}")
            if duplicates:
                report.problem(S, f"{duplicates} duplicate deliveries during a pure connection outage")
            if multi or charged_during:
                report.problem(S, f"attempts charged by refused connections: {multi} rows with attempts > 1, "
                                  f"during the outage {charged_during}")
            if ended_badly:
                report.problem(S, f"rows ended without delivery: {states}")
            if other:
                report.problem(S, f"unexpected attempt outcomes {other}")
            if not lo <= refused_before_return <= hi + 1:
                report.problem(S, f"{refused_before_return} refused attempts in a {window:.1f}s outage; the backoff "
                                  f"(1 s doubling to 60 s, 50–100 % jitter) allows {lo}–{hi} (+1 at the return)")
            if times and min(times) - resumed_at > 60 + 2:
                report.problem(S, f"first delivery {min(times) - resumed_at:.1f}s after the relay returned, "
                                  "more than one capped pause (60 s)")
        finally:
            herald.cleanup()
            capture.stop()


# --------------------------------------------------------------------------- 2. duplicates per crash
def crashes(herald_bin: Path, report: Report, count_: int, kills: int, connections: int = 2) -> None:
    S = "2 SIGKILL"
    with tempfile.TemporaryDirectory(prefix="herald-crash-") as tmp_name:
        tmp = Path(tmp_name)
        herald = Herald(herald_bin, tmp)
        capture = CaptureServer(delay=0.01)
        capture.start()
        try:
            # The accounting at its tightest: 2 unrecorded sends per connection (the default is 32).
            config = write_config(tmp, capture, smtp={"connections": connections}, worker={"unrecordedPerConnection": 2})
            db = tmp / "herald.sqlite"
            recipients = queue_bulk(herald, config, tmp, "crash", count_)
            # Kill points spread over the first ~85 % of the queue, not evenly spaced.
            span = count_ * 0.85
            kill_at = sorted({max(1, int(span * (i + 1) / kills - (span / kills) * ((i * 37) % 10) / 40))
                              for i in range(kills)})
            boundaries: list = []  # received_count once each killed worker's last DATA settled
            spawns: list = []      # wall time each worker was started
            first_new: list = []   # seconds from each start to its first accepted message
            orphan_logs = 0

            def run_until(worker: Worker, stop_at: Optional[int], timeout: float) -> None:
                base = capture.received_count
                seen_first = None
                deadline = time.monotonic() + timeout
                while True:
                    received = capture.received_count
                    if seen_first is None and received > base:
                        seen_first = time.monotonic() - worker.started
                    if stop_at is not None and received >= stop_at:
                        worker.kill()
                        break
                    if not worker.alive():
                        if stop_at is not None:
                            raise ScenarioFailed(f"the worker exited ({worker.proc.returncode}) at {received} "
                                                 f"accepted, before {stop_at}: {worker.tail()}")
                        break
                    if time.monotonic() > deadline:
                        worker.kill()
                        raise ScenarioFailed(f"timed out after {timeout:g}s at {received} accepted "
                                             f"(waiting for {stop_at or 'the queue to empty'}): {worker.tail()}")
                    time.sleep(0.002)
                first_new.append(seen_first)

            for k in kill_at:
                spawns.append(time.time())
                worker = herald.start("worker", config=config, name="worker")
                run_until(worker, k, timeout=60)
                time.sleep(0.5)  # a DATA the dead worker had in progress is accepted by now or never
                boundaries.append(capture.received_count)
                if len(spawns) > 1 and "its rows are back in the queue" in worker.stderr():
                    orphan_logs += 1
            spawns.append(time.time())
            final = herald.start("worker", "--until-empty", config=config, name="final")
            run_until(final, None, timeout=120)
            if "its rows are back in the queue" in final.stderr():
                orphan_logs += 1
            if final.proc.returncode != 0:
                report.problem(S, f"the final `worker --until-empty` exited {final.proc.returncode}: {final.tail()}")

            seen = receptions(capture)
            lost = sorted(set(recipients) - set(seen))
            per_crash, unexplained = duplicates_by_crash(seen, boundaries)
            # `interrupted` rows are written by the next worker's first sweep: attribute them to the
            # crash before the start of the worker whose lifetime their finished_at falls in.
            interrupted = query(db, "SELECT outbox_id, finished_at FROM delivery_attempts WHERE outcome = 'interrupted'")
            per_crash_interrupted = [0] * len(boundaries)
            stray = 0
            for row in interrupted:
                t = row["finished_at"] / 1000
                index = next((i for i in range(len(spawns) - 1, -1, -1) if t >= spawns[i] - 0.05), None)
                if index is None or index == 0:
                    stray += 1
                else:
                    per_crash_interrupted[index - 1] += 1
            charged: dict = {}
            for row in interrupted:
                charged[row["outbox_id"]] = charged.get(row["outbox_id"], 0) + 1
            ids = {r["recipient"]: r for r in query(db, "SELECT id, recipient, state, attempts FROM outbox")}
            uncharged_repeats = sorted(r for r, idx in seen.items()
                                       if r in ids and len(idx) - 1 > charged.get(ids[r]["id"], 0))
            not_sent = {r: row["state"] for r, row in ids.items() if row["state"] != "sent"}
            overcharged = sorted(r for r, row in ids.items() if row["attempts"] > 1 + charged.get(row["id"], 0))
            restarts = [t for t in first_new[1:] if t is not None]

            report.add(S, "messages queued / SMTP connections", f"{count_} / {connections}")
            report.add(S, "kills (at accepted messages)", f"{len(kill_at)} ({', '.join(map(str, kill_at))})")
            report.add(S, "total duplicates", sum(per_crash) + len(unexplained))
            report.add(S, "duplicates per crash (max; all)",
                       f"{max(per_crash) if per_crash else 0}; {per_crash}")
            report.add(S, "`interrupted` rows per crash (max / mean; all)",
                       f"{max(per_crash_interrupted)} / {statistics.mean(per_crash_interrupted):.1f}; "
                       f"{per_crash_interrupted}" if per_crash_interrupted else "—")
            report.add(S, "messages lost", len(lost))
            report.add(S, "max attempts on a row", max((row["attempts"] for row in ids.values()), default=0))
            report.add(S, "orphan return: restart → first new delivery (mean / max s)",
                       f"{statistics.mean(restarts):.2f} / {max(restarts):.2f} over {len(restarts)} restarts"
                       if restarts else "—")
            report.add(S, "cold start → first delivery (s, for comparison)", first_new[0])
            report.add(S, "restarts that logged the dead worker's rows back", f"{orphan_logs}/{len(kill_at)}")

            bound = 2 * connections
            if lost:
                report.problem(S, f"{len(lost)} messages never delivered, e.g. {lost[:5]}")
            if not_sent:
                report.problem(S, f"{len(not_sent)} outbox rows not 'sent' at the end: "
                                  f"{dict(list(not_sent.items())[:5])}")
            if unexplained:
                report.problem(S, f"{len(unexplained)} messages delivered twice with no crash in between: "
                                  f"{sorted(set(unexplained))[:5]}")
            if per_crash and max(per_crash) > bound:
                report.problem(S, f"a crash duplicated {max(per_crash)} messages, over the documented "
                                  f"{bound} (2 per connection): {per_crash}")
            if per_crash_interrupted and max(per_crash_interrupted) > bound:
                report.problem(S, f"a crash charged {max(per_crash_interrupted)} `interrupted` attempts, over "
                                  f"{bound}: {per_crash_interrupted}")
            if stray:
                report.problem(S, f"{stray} `interrupted` rows written before any restart")
            if uncharged_repeats:
                report.problem(S, f"{len(uncharged_repeats)} messages delivered again without an `interrupted` "
                                  f"attempt for the repeat: {uncharged_repeats[:5]}")
            if overcharged:
                report.problem(S, f"{len(overcharged)} rows charged more attempts than 1 + their `interrupted` "
                                  f"attempts (a row a dead worker never started must come back uncharged): "
                                  f"{overcharged[:5]}")
            if restarts and max(restarts) > 10:
                report.problem(S, f"a restart took {max(restarts):.1f}s to its first delivery")
        finally:
            herald.cleanup()
            capture.stop()


# --------------------------------------------------------------------------- 3. storage
def ledger_fault(herald_bin: Path, report: Report, S: str, count_: int, fault, ledger_dir: Optional[Path] = None,
                 tmp: Optional[Path] = None) -> None:
    """Common frame of 3a/3b: queue, start a worker, wait for 20 accepted, run `fault` (a function
    (worker, db, capture) -> (wall time the fault ended, messages accepted and rows sent just before
    it ended, messages accepted during it, whether the worker lived through it)), then measure the
    recovery."""
    herald = Herald(herald_bin, tmp)
    capture = CaptureServer(delay=0.02)
    capture.start()
    worker = None
    try:
        db = (ledger_dir or tmp) / "herald.sqlite"
        config = write_config(tmp, capture, database={"path": str(db)})  # busyTimeout: default 10s
        recipients = queue_bulk(herald, config, tmp, "store", count_)
        worker = herald.start("worker", config=config, name="worker")
        if not poll(lambda: capture.received_count >= 20 or not worker.alive(), 60):
            raise ScenarioFailed(f"20 messages not accepted within 60 s: {worker.tail()}")
        if not worker.alive():
            raise ScenarioFailed(f"the worker exited ({worker.proc.returncode}) before the fault: {worker.tail()}")

        ended_at, received_before, sent_before, during, survived_fault = fault(worker, db, capture)
        relay, ledger = next_after(capture, db, ended_at, received_before, sent_before, timeout=60)
        done = poll(lambda: all_sent(db, count_) or not worker.alive(), 90, 0.2)
        survived = worker.alive()
        finished = all_sent(db, count_)
        unavailable, recovered = stderr_lines(worker, UNAVAILABLE), stderr_lines(worker, RECOVERED)
        errors = error_lines(worker)
        code = worker.terminate() if survived else worker.proc.returncode
        seen = receptions(capture)
        delivered = len(set(recipients) & set(seen))
        duplicates = sum(len(v) - 1 for v in seen.values())
        states = {r["state"]: r["n"] for r in query(db, "SELECT state, count(*) AS n FROM outbox GROUP BY state")}
        integrity = integrity_check(db)

        report.add(S, "worker survived (exit code after SIGTERM)",
                   f"{'yes' if survived_fault and survived else 'NO'} ({fmt(code)})")
        report.add(S, "messages accepted by the relay during the fault", during)
        report.add(S, "fault end → next accepted message (s)", relay)
        report.add(S, "fault end → next send recorded in the ledger (s)", ledger)
        report.add(S, "delivered", f"{delivered}/{count_}")
        report.add(S, "duplicates", duplicates)
        report.add(S, "`ledger unavailable` / `available again` log lines", f"{unavailable} / {recovered}")
        report.add(S, "PRAGMA integrity_check", ", ".join(integrity) or "—")
        if not (survived_fault and survived):
            report.problem(S, f"the worker exited (code {worker.proc.returncode}): {worker.tail()}")
        elif code != 0:
            report.problem(S, f"the worker did not exit 0 on SIGTERM (code {fmt(code)}): {worker.tail()}")
        if delivered != count_ or not finished or done is None:
            report.problem(S, f"{count_ - delivered} of {count_} never delivered; outbox states {states}")
        if duplicates:
            report.problem(S, f"{duplicates} duplicate deliveries across a waited-out ledger fault")
        if integrity != ["ok"]:
            report.problem(S, f"integrity_check: {integrity}")
        if unavailable == 0:
            report.problem(S, f"no `{UNAVAILABLE}` warning logged during the fault")
        if survived and recovered == 0:
            report.problem(S, f"no `{RECOVERED}` line logged after the fault")
        if errors:
            report.note(S, f"error-level lines from the worker: {errors[:3]}")
    finally:
        if worker is not None:
            worker.kill()
        herald.cleanup()
        capture.stop()


def write_lock(herald_bin: Path, report: Report, count_: int, seconds: float = 12.0) -> None:
    S = "3a write lock"

    def fault(worker: Worker, db: Path, capture: CaptureServer) -> tuple:
        with WriteLock(db, timeout=30):  # BEGIN IMMEDIATE from another process; nothing written
            at_start = capture.received_count
            died = hold(seconds, worker)
            sent_before = sent_rows(db)
            received_before = capture.received_count
            during = received_before - at_start
        return time.time(), received_before, sent_before, during, died is None

    report.add(S, "lock held (s) / database.busyTimeout", f"{seconds:g} / 10s (default)")
    with tempfile.TemporaryDirectory(prefix="herald-lock-") as tmp_name:
        ledger_fault(herald_bin, report, S, count_, fault, tmp=Path(tmp_name))


def full_disk(herald_bin: Path, report: Report, count_: int, seconds: float = 5.0) -> None:
    S = "3b full disk"
    with tempfile.TemporaryDirectory(prefix="herald-full-") as tmp_name:
        tmp = Path(tmp_name)
        ledger = tmp / "ledger"
        ledger.mkdir()
        try:
            result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", str(ledger)],
                                    capture_output=True, text=True, timeout=30)
            mounted = result.returncode == 0
            why = (result.stderr or result.stdout).strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            mounted, why = False, str(exc)
        if not mounted:
            report.add(S, "skipped", f"cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): {why}")
            return
        try:
            def fault(worker: Worker, db: Path, capture: CaptureServer) -> tuple:
                at_start = capture.received_count
                filler = fill_filesystem(ledger)
                try:
                    free = free_bytes(ledger)
                    full_at = time.monotonic()
                    warned = poll(lambda: UNAVAILABLE in worker.stderr() or not worker.alive(), 15, 0.05)
                    report.add(S, "tmpfs size / free bytes while full / held (s)", f"8 MiB / {free} / {seconds:g}")
                    report.add(S, "disk full → `ledger unavailable` logged (s)",
                               time.monotonic() - full_at if warned and worker.alive() else None)
                    died = hold(seconds, worker)
                    sent_before = sent_rows(db)
                    received_before = capture.received_count
                    during = received_before - at_start
                finally:
                    filler.unlink()
                return time.time(), received_before, sent_before, during, died is None

            ledger_fault(herald_bin, report, S, count_, fault, ledger_dir=ledger, tmp=tmp)
        finally:
            unmount(ledger)  # ledger_fault has killed its worker by now


# --------------------------------------------------------------------------- main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald", help="the herald binary (default %(default)s, "
                                                                        "relative to the repository root)")
    parser.add_argument("--quick", action="store_true", help="smaller numbers (under ~2 minutes)")
    parser.add_argument("--only", default="1,2,3a,3b", help="scenarios to run, comma-separated (default %(default)s)")
    args = parser.parse_args()

    binary = Path(args.herald)
    if not binary.is_absolute():
        binary = Path(os.path.abspath(binary if binary.exists() else REPO / binary))
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"error: no executable herald at {binary}", file=sys.stderr)
        return 2
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    q = args.quick
    plan = [
        ("1", "1 relay outage", lambda r: relay_outage(binary, r, 200 if q else 500, 15.0 if q else 60.0)),
        ("2", "2 SIGKILL", lambda r: crashes(binary, r, 400 if q else 2000, 4 if q else 10)),
        ("3a", "3a write lock", lambda r: write_lock(binary, r, 100 if q else 200)),
        ("3b", "3b full disk", lambda r: full_disk(binary, r, 100 if q else 200)),
    ]
    report = Report()
    started = time.monotonic()
    for name, label, run in plan:
        if name not in only:
            continue
        t0 = time.monotonic()
        print(f"running scenario {name} …", file=sys.stderr, flush=True)
        try:
            run(report)
        except ScenarioFailed as exc:
            report.problem(label, f"scenario aborted: {exc}")
        except Exception as exc:  # a bug here must not hide the other scenarios' figures
            report.problem(label, f"scenario crashed: {type(exc).__name__}: {exc}")
        report.add(label, "scenario wall time (s)", time.monotonic() - t0)

    stat = binary.stat()
    print(f"Herald resilience figures — binary {binary} "
          f"(built {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(stat.st_mtime))}), "
          f"{os.cpu_count()} CPUs, {'--quick' if q else 'full'} run, {time.monotonic() - started:.0f} s\n")
    print("| scenario | figure | value |")
    print("|---|---|---|")
    for scenario, figure, value in report.rows:
        print(f"| {scenario} | {figure} | {str(value).replace('|', '/')} |")
    print()
    if report.problems:
        print("Problems seen:")
        for line in report.problems:
            print(f"* {line}")
    else:
        print("Problems seen: none")
    for line in report.notes:
        print(f"* note {line}")
    print()
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    print(f"Command: `{shlex.join(argv)}` (cwd {os.getcwd()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`make bench-scale`: what the ledger's size costs, grown by real campaigns.

A SQLite ledger grows by campaigns of --step rows (a CSV imported with `herald campaigns create`, then drained to
Postfix's smtp-sink with `herald worker --until-empty --concurrency 4`). Before the first campaign and after each,
`herald serve --no-worker` on that ledger is asked, each --probes times (medians reported):
  GET /metrics (the ledger's gauges read at every scrape), the console's overview (signed in), the campaign list as
  JSON (GET /admin/campaigns), the newest campaign's report, and the audit of one address,
and the file's bytes per message are read. Each campaign also reports its end-to-end time (CSV to all sent), its
import and send rates, and the worker's CPU per message.

With --prune, `herald serve` (its worker embedded) then runs while wrk sends accounts:sendOobCode at a paced rate:
first with retention off; then with `ledger.messageRetention: 30d` after the first half of the first campaign was aged
40 days; then with `ledger.archive` on too, after its second half was. Each prune's duration and rows per second, the
API's p99 in 20 s windows during it, and the archive's bytes per message; then the time the worker takes to give
the freed pages back to the file system, and the API's p99 meanwhile.

Not a test: nothing here asserts. 10 million rows take --steps 10 (BENCH_SCALE_STEPS=10).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import NO_ABUSE_LIMITS, run_wrk  # noqa: E402  (scripts/bench.py: wrk with scripts/bench-sendoobcode.lua)

REPO = Path(__file__).resolve().parent.parent
TOKEN = "scale-bench-admin-token-0123456789abcdef"
CONFIG = str(REPO / "config/herald.yaml")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"bench-scale: nothing listened on port {port} within {timeout}s")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list, env: dict) -> float:
    """Runs a command to its end; returns its wall seconds."""
    started = time.monotonic()
    argv = [*argv, "--config", CONFIG]
    result = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        sys.exit(f"bench-scale: {' '.join(map(str, argv[:3]))} failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    return time.monotonic() - started


def grow(herald: str, env: dict, work: Path, index: int, rows: int, offset: int) -> str:
    csv_path = work / f"campaign{index}.csv"
    with csv_path.open("w") as out:
        out.write("email,display_name,locale\n")
        for i in range(offset, offset + rows):
            out.write(f"user{i}@example.com,User {i},{'pl' if i % 3 == 0 else 'en'}\n")
    import_seconds = run([herald, "campaigns", "create", f"scale-{index}", "--action", "verify-email",
                          "--recipients", str(csv_path)], env)
    csv_path.unlink()
    cpu_before = children_cpu()
    send_seconds = run([herald, "worker", "--until-empty", "--concurrency", "4"], env)
    cpu = children_cpu() - cpu_before
    return (f"campaign {index}: {rows:,} rows CSV to all sent in {import_seconds + send_seconds:,.1f} s "
            f"(import {rows / import_seconds:,.0f} rows/s, send {rows / send_seconds:,.0f} msg/s, "
            f"worker CPU {cpu / rows * 1e6:.0f} µs/msg)")


def console_cookie(base: str) -> str:
    form = requests.get(f"{base}/admin/sign-in", timeout=30)
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    signin_cookie = form.headers["Set-Cookie"].split(";", 1)[0]
    answer = requests.post(f"{base}/admin/sign-in", data={"token": TOKEN, "csrf": csrf}, headers={"Cookie": signin_cookie},
                           allow_redirects=False, timeout=30)
    return answer.headers["Set-Cookie"].split(";", 1)[0]


def timed(probes: int, call) -> float:
    """Median milliseconds of `probes` calls, after one unmeasured call."""
    call()
    times = []
    for _ in range(probes):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(herald: str, env: dict, database: Path, probes: int, audit_email: str) -> dict:
    port = free_port()
    server_env = {**env, "HERALD_SERVER_HOST": "127.0.0.1", "HERALD_SERVER_PORT": str(port)}
    server = subprocess.Popen([herald, "serve", "--no-worker", "--config", CONFIG], env=server_env, cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        base = f"http://127.0.0.1:{port}"
        bearer = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
        cookie = {"Cookie": console_cookie(base)}

        def get(path: str, headers: dict) -> requests.Response:
            answer = requests.get(base + path, headers=headers, timeout=600)
            if answer.status_code != 200:
                sys.exit(f"bench-scale: GET {path} answered {answer.status_code}: {answer.text[:300]}")
            return answer

        campaigns = get("/admin/campaigns", bearer).json()
        figures = {
            "/metrics": timed(probes, lambda: get("/metrics", {})),
            "overview": timed(probes, lambda: get("/admin/", cookie)),
            "campaign list": timed(probes, lambda: get("/admin/campaigns", bearer)),
        }
        if campaigns:
            newest = campaigns[0]["id"]
            figures["campaign report"] = timed(max(1, probes // 4), lambda: get(f"/admin/campaigns/{newest}", bearer))
        figures["audit by address"] = timed(probes, lambda: get(f"/admin/audit?email={audit_email}", bearer))
    finally:
        server.terminate()
        server.wait(timeout=60)
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        messages = db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    figures["messages"] = messages
    figures["bytes per message"] = database.stat().st_size / messages if messages else 0
    return figures


def paced_p99(url: str, seconds: float, rate: float, run: str) -> dict:
    """sendOobCode at about `rate` requests/s from 10 wrk connections for `seconds`."""
    connections = 10
    return run_wrk(url, connections, seconds, 1000.0 * connections / rate, run)


def age(database: Path, campaign: int, low: int, high: int) -> None:
    """Ages the campaign's messages with ids in [low, high], and their codes, by 40 days."""
    age_ms = 40 * 86_400_000
    with sqlite3.connect(database, timeout=60) as db:
        db.execute("UPDATE outbox SET queued_at = queued_at - ?1, first_queued_at = first_queued_at - ?1, "
                   "updated_at = updated_at - ?1, sent_at = sent_at - ?1 WHERE campaign_id = ?2 AND id BETWEEN ?3 AND ?4",
                   (age_ms, campaign, low, high))
        db.execute("UPDATE action_codes SET created_at = created_at - ?1, expires_at = expires_at - ?1 WHERE outbox_id IN "
                   "(SELECT id FROM outbox WHERE campaign_id = ?2 AND id BETWEEN ?3 AND ?4)", (age_ms, campaign, low, high))


def prune(herald: str, env: dict, database: Path, rate: float, work: Path) -> list:
    """The API's p99 with retention off; then the first half of the first campaign aged 40 days and pruned, then its
    second half aged and pruned with `ledger.archive` on: each prune's duration and the API's p99 during it."""
    with sqlite3.connect(database) as db:
        campaign, low, high = db.execute(
            "SELECT campaign_id, MIN(id), MAX(id) FROM outbox WHERE campaign_id = (SELECT MIN(id) FROM campaigns)").fetchone()
        rows = db.execute("SELECT SUM(n) FROM outbox_tallies WHERE campaign = ?", (campaign,)).fetchone()[0]
    middle = (low + high) // 2
    archive = work / "archive"
    lines = []
    phases = [("retention off", {"HERALD_LEDGER_MESSAGE_RETENTION": "0"}, None),
              ("prune", {"HERALD_LEDGER_MESSAGE_RETENTION": "30d"}, (low, middle)),
              ("prune with ledger.archive", {"HERALD_LEDGER_MESSAGE_RETENTION": "30d", "HERALD_LEDGER_ARCHIVE": str(archive)},
               (middle + 1, high))]
    for label, settings, aged in phases:
        if aged:
            age(database, campaign, *aged)
        port = free_port()
        server_env = {**env, "HERALD_SERVER_HOST": "127.0.0.1", "HERALD_SERVER_PORT": str(port), **settings, **NO_ABUSE_LIMITS}
        server = subprocess.Popen([herald, "serve", "--config", CONFIG], env=server_env, cwd=REPO, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            wait_for_port(port)
            url = f"http://127.0.0.1:{port}/v1/accounts:sendOobCode?key=demo-api-key"
            if not aged:
                idle = paced_p99(url, 20, rate, "idle")
                lines.append(f"{label}: sendOobCode paced {idle.get('rate', 0):,.0f}/s, p50 {idle.get('p50', 0):.2f} ms, "
                             f"p99 {idle.get('p99', 0):.2f} ms")
                continue
            with sqlite3.connect(database, timeout=60) as db:
                before = db.execute("SELECT COALESCE(SUM(n), 0) FROM outbox_tallies WHERE campaign = ?", (campaign,)).fetchone()[0]
            target = before - (aged[1] - aged[0] + 1)
            started = time.monotonic()
            windows = []
            left = before
            while left > target and time.monotonic() - started < 3600:
                windows.append(paced_p99(url, 20, rate, f"prune{len(windows)}"))
                with sqlite3.connect(database, timeout=60) as db:
                    left = db.execute("SELECT COALESCE(SUM(n), 0) FROM outbox_tallies WHERE campaign = ?", (campaign,)).fetchone()[0]
            seconds = time.monotonic() - started
            p99s = [w.get("p99", 0) for w in windows]
            lines.append(f"{label}: {before - left:,} messages (campaign {campaign}) within {seconds:,.0f} s "
                         f"(about {(before - left) / seconds:,.0f} messages/s; measured in 20 s windows)")
            lines.append(f"  during it: sendOobCode paced {statistics.median(w.get('rate', 0) for w in windows):,.0f}/s, "
                         f"p99 per window median {statistics.median(p99s):.2f} ms, worst {max(p99s):.2f} ms")
            lines.append("  p99 by window (ms): " + " ".join(f"{p:.1f}" for p in p99s))
            if "HERALD_LEDGER_ARCHIVE" in settings:
                size = sum(f.stat().st_size for f in archive.glob("*.jsonl.gz"))
                lines.append(f"  archive: {size:,} bytes, {size / max(1, before - left):,.0f} bytes/message, "
                             f"{len(list(archive.glob('*.jsonl.gz')))} file(s)")
        finally:
            server.terminate()
            server.wait(timeout=120)
    lines += reclaim(herald, env, database, rate)
    return lines


def pages(database: Path) -> tuple[int, int, int]:
    """The ledger's free pages, all its pages, and the file's bytes."""
    with sqlite3.connect(database, timeout=60) as db:
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        total = db.execute("PRAGMA page_count").fetchone()[0]
    return free, total, database.stat().st_size


def reclaim(herald: str, env: dict, database: Path, rate: float) -> list:
    """`herald serve` with retention on and nothing left to prune: the worker gives the free pages back to the file
    system; the time it takes, and the API's p99 in 20 s windows meanwhile."""
    free, total, size = pages(database)
    if free <= total // 10 + 1024:
        return [f"space given back: nothing to give ({free:,} of {total:,} pages free)"]
    port = free_port()
    server_env = {**env, "HERALD_SERVER_HOST": "127.0.0.1", "HERALD_SERVER_PORT": str(port),
                  "HERALD_LEDGER_MESSAGE_RETENTION": "30d", **NO_ABUSE_LIMITS}
    server = subprocess.Popen([herald, "serve", "--config", CONFIG], env=server_env, cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/v1/accounts:sendOobCode?key=demo-api-key"
        started = time.monotonic()
        windows = []
        left = free
        while left > total // 10 + 1024 and time.monotonic() - started < 3600:
            windows.append(paced_p99(url, 20, rate, f"reclaim{len(windows)}"))
            left, now_total, _ = pages(database)
            total = now_total
        seconds = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=120)
    _, _, after = pages(database)
    p99s = [w.get("p99", 0) for w in windows]
    return [f"space given back: the file from {size / 2**20:,.0f} MiB to {after / 2**20:,.0f} MiB within {seconds:,.0f} s "
            f"({(size - after) / 2**20 / seconds:,.1f} MiB/s; measured in 20 s windows)",
            f"  during it: sendOobCode paced {statistics.median(w.get('rate', 0) for w in windows):,.0f}/s, "
            f"p99 per window median {statistics.median(p99s):.2f} ms, worst {max(p99s):.2f} ms",
            "  p99 by window (ms): " + " ".join(f"{p:.1f}" for p in p99s)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", default=str(REPO / ".build/release/herald"))
    parser.add_argument("--step", type=int, default=1_000_000, help="rows per campaign")
    parser.add_argument("--steps", type=int, default=2, help="campaigns (the ledger ends with step x steps messages)")
    parser.add_argument("--probes", type=int, default=20, help="requests per figure (the report: a quarter of them)")
    parser.add_argument("--config", default=str(REPO / "config/herald.yaml"), help="the configuration file every command reads")
    parser.add_argument("--prune", action="store_true", help="then prune the first campaign under paced API load")
    parser.add_argument("--prune-rate", type=float, default=200, help="sendOobCode requests per second during --prune")
    args = parser.parse_args()
    sink_path = shutil.which("smtp-sink") or "/usr/sbin/smtp-sink"
    if not Path(sink_path).exists():
        sys.exit("bench-scale: smtp-sink not found; install Debian's postfix (scripts/install-deps.sh bench)")

    work = Path(tempfile.mkdtemp(prefix="herald-scale-"))
    port = free_port()
    sink = subprocess.Popen([sink_path] + (["-u", "nobody"] if os.geteuid() == 0 else []) + [f"127.0.0.1:{port}", "1000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    database = work / "scale.sqlite"
    global CONFIG
    CONFIG = args.config
    env = {**os.environ, "HERALD_SMTP_URL": f"smtp://127.0.0.1:{port}/herald.bench", "HERALD_LOG_LEVEL": "warning",
           "HERALD_WORKER_BATCH_SIZE": "200", "HERALD_ACCOUNTS_OWNER": "app", "HERALD_DATABASE_PATH": str(database),
           "HERALD_SERVER_ADMIN_TOKEN": TOKEN, "HERALD_SERVER_METRICS_GAUGE_INTERVAL": "0s"}
    rows = []
    try:
        wait_for_port(port)
        if args.prune:
            # Made as with retention on (incremental auto-vacuum), so the prune's space can be given back.
            subprocess.run([args.herald, "campaigns", "list", "--config", CONFIG], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                           env={**env, "HERALD_LEDGER_MESSAGE_RETENTION": "30d"})
        rows.append(measure(args.herald, env, database, args.probes, "user0@example.com"))
        print(f"empty ledger: {rows[-1]}", flush=True)
        for index in range(1, args.steps + 1):
            print(grow(args.herald, env, work, index, args.step, (index - 1) * args.step), flush=True)
            rows.append(measure(args.herald, env, database, args.probes, "user0@example.com"))
            print(f"after campaign {index}: {rows[-1]}", flush=True)
        if args.prune:
            pruned = prune(args.herald, env, database, args.prune_rate, work)
            for line in pruned:
                print(line, flush=True)
    finally:
        sink.terminate()
        sink.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)

    names = ["/metrics", "overview", "campaign list", "campaign report", "audit by address"]
    print("\nmedian milliseconds per request, by ledger size")
    print(f"{'messages':>12} | " + " | ".join(f"{name:>16}" for name in names) + " | bytes/message")
    for row in rows:
        cells = [f"{row[name]:>13.1f} ms" if name in row else f"{'-':>16}" for name in names]
        print(f"{row['messages']:>12,} | " + " | ".join(cells) + f" | {row['bytes per message']:>13,.0f}")
    if args.prune:
        print("\n" + "\n".join(pruned))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`make bench`: Herald's send throughput beside Postfix's smtp-source, into one smtp-sink.

In one run against one smtp-sink on loopback, with one reused connection each:
  (a) smtp-source -d sends N messages of Herald's rendered size;
  (b) Herald queues N verification emails (`herald send --recipients`) and its worker
      renders, sends and records each one (`herald worker --until-empty --concurrency 1`).
Prints both rates, their ratio, Herald's queueing rate and the worker's peak RSS, then
(c) imports a 1,000,000-row campaign CSV and prints rows/s and peak RSS.
Each side runs --runs times; medians are reported. Not a test: nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    sys.exit(f"bench: smtp-sink did not listen on {port}")


def run_measured(argv: list[str], env: dict | None = None, timeout: float = 600) -> float:
    """Runs argv; returns its wall-clock seconds."""
    started = time.monotonic()
    process = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        sys.exit(f"bench: {argv[0]} exceeded {timeout}s")
    elapsed = time.monotonic() - started
    if process.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} exited {process.returncode}: {stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def run_with_rss(argv: list[str], env: dict, timeout: float = 600) -> tuple[float, int]:
    """Runs argv and returns (wall seconds, peak RSS KiB) using wait4 on that child alone."""
    started = time.monotonic()
    log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty worker must never block on stderr
    process = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
            sys.exit(f"bench: {argv[0]} exceeded {timeout}s")
        time.sleep(0.01)
    elapsed = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        log.seek(0)
        sys.exit(f"bench: {' '.join(argv)} exited {code}: {log.read().decode(errors='replace')[-2000:]}")
    return elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", default=str(REPO / ".build/release/herald"))
    parser.add_argument("-n", type=int, default=20000, help="messages per run (>= 20000 for the target)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--import-rows", type=int, default=1_000_000, help="campaign CSV rows for the import benchmark (0 skips it)")
    args = parser.parse_args()
    for tool in ("smtp-sink", "smtp-source"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"bench: {tool} not found; install Debian's postfix (scripts/install-deps.sh bench)")
    sbin = lambda tool: shutil.which(tool) or f"/usr/sbin/{tool}"

    work = Path(tempfile.mkdtemp(prefix="herald-bench-"))
    port = free_port()
    sink_argv = [sbin("smtp-sink")] + (["-u", "nobody"] if os.geteuid() == 0 else []) + [f"127.0.0.1:{port}", "1000"]
    sink = subprocess.Popen(sink_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        base_env = {**os.environ, "HERALD_SMTP_URL": f"smtp://127.0.0.1:{port}/herald.bench",
                    "HERALD_LOG_LEVEL": "warning", "HERALD_WORKER_BATCH_SIZE": "200",
                    "HERALD_ACCOUNTS_OWNER": "app"}  # recipients without accounts, as an app-owned deployment

        preview = work / "preview.eml"
        subprocess.run([args.herald, "templates", "preview", "verify-email", "--out", str(preview)],
                       cwd=REPO, env=base_env, check=True, stdout=subprocess.DEVNULL)
        size = preview.stat().st_size
        recipients = work / "recipients.txt"
        recipients.write_text("".join(f"user{i}@example.com\n" for i in range(args.n)))

        source_rates, herald_rates, queue_rates, rss = [], [], [], []
        for run in range(1, args.runs + 1):
            seconds = run_measured([sbin("smtp-source"), "-s", "1", "-m", str(args.n), "-l", str(size), "-d",
                                          "-f", "bench@herald.test", "-t", "rcpt@example.com", f"127.0.0.1:{port}"])
            source_rates.append(args.n / seconds)

            database = work / f"run{run}.sqlite"
            env = {**base_env, "HERALD_DATABASE_PATH": str(database)}
            queue_seconds = run_measured([args.herald, "send", "verify-email", "--recipients", str(recipients),
                                                "--continue-url", "https://localhost/welcome"], env=env)
            queue_rates.append(args.n / queue_seconds)
            send_seconds, peak = run_with_rss([args.herald, "worker", "--until-empty", "--concurrency", "1"], env)
            with sqlite3.connect(database) as db:
                sent = db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'sent'").fetchone()[0]
                attempts = db.execute("SELECT COUNT(*) FROM delivery_attempts WHERE outcome = 'sent'").fetchone()[0]
            if sent != args.n or attempts != args.n:
                sys.exit(f"bench: ledger shows {sent} sent rows and {attempts} sent attempts, expected {args.n}")
            herald_rates.append(args.n / send_seconds)
            rss.append(peak)
            print(f"run {run}: smtp-source {source_rates[-1]:,.0f} msg/s | herald send {herald_rates[-1]:,.0f} msg/s "
                  f"(ledger: {sent} sent) | herald queue {queue_rates[-1]:,.0f} msg/s | worker peak RSS {peak / 1024:.1f} MiB",
                  flush=True)

        import_line = None
        if args.import_rows:
            csv_path = work / "campaign.csv"
            with csv_path.open("w") as out:
                out.write("email,display_name,locale,plan\n")
                for i in range(args.import_rows):
                    out.write(f"user{i}@example.com,User {i},{'pl' if i % 3 == 0 else 'en'},p{i % 7}\n")
            env = {**base_env, "HERALD_DATABASE_PATH": str(work / "import.sqlite")}
            seconds, peak = run_with_rss([args.herald, "campaign", "create", "bench", "--action", "verify-email",
                                          "--recipients", str(csv_path)], env)
            with sqlite3.connect(work / "import.sqlite") as db:
                rows = db.execute("SELECT COUNT(*) FROM outbox WHERE campaign_id IS NOT NULL").fetchone()[0]
            if rows != args.import_rows:
                sys.exit(f"bench: import stored {rows} rows, expected {args.import_rows}")
            import_line = (f"campaign import             {args.import_rows / seconds:,.0f} rows/s for {args.import_rows:,} CSV rows "
                           f"(target >= 50,000), peak RSS {peak / 1024:.1f} MiB")

        source, herald = statistics.median(source_rates), statistics.median(herald_rates)
        print()
        print(f"messages per run          {args.n} (rendered verification emails, {size} bytes each)")
        print(f"connections               1 each (smtp-source -s 1 -d; herald --concurrency 1)")
        print(f"smtp-source               {source:,.0f} msg/s (median of {args.runs})")
        print(f"herald worker             {herald:,.0f} msg/s (median; render + send + ledger record per message)")
        print(f"ratio herald/smtp-source  {herald / source:.2f} (target >= 0.70)")
        print(f"herald queueing           {statistics.median(queue_rates):,.0f} msg/s (send --recipients)")
        print(f"herald worker peak RSS    {max(rss) / 1024:.1f} MiB")
        if import_line:
            print(import_line)
    finally:
        sink.terminate()
        sink.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

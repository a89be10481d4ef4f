#!/usr/bin/env python3
"""`make bench`: Herald's send throughput beside Postfix's smtp-source, into one smtp-sink.

In one run against one smtp-sink on loopback, at 1 and at 4 connections (--connections):
  (a) smtp-source -s C -d sends N messages of Herald's rendered size;
  (b) Herald queues N verification emails (`herald send --recipients`) and its worker
      renders, sends and records each one (`herald worker --until-empty --concurrency C`).
Prints both rates, their ratio, Herald's queueing rate, the worker's CPU per message (user + sys,
from wait4 as /usr/bin/time reports it) and its peak RSS, then
(c) imports a 1,000,000-row campaign CSV and prints rows/s and peak RSS, and
(d) drives `accounts:sendOobCode` on `herald serve` (its embedded worker draining into the same
    smtp-sink) with wrk and scripts/bench-sendoobcode.lua: a closed loop for the maximum, then a
    load paced at --api-rate requests/s, and prints the rates and latency percentiles.
(f) imports a --account-rows Firebase JSON export (SCRYPT, the Firebase console's parameters) with
    `herald accounts import`, then --plaintext-rows accounts with plaintext passwords (Herald's CSV), and prints
    rows/s, peak RSS and the cores the plaintext import kept busy (CPU seconds / wall seconds).
(e) With a PostgreSQL server (HERALD_TEST_POSTGRES, as `make bench` starts one with fsync on), queues N emails
    into a PostgreSQL ledger and drains them with 1 and with 3 `herald worker` processes at once (--pg-workers),
    beside the SQLite rows of (b).
Each side of (a)/(b) runs --runs times; medians are reported. Not a test: nothing here asserts.
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
    sys.exit(f"bench: nothing listened on port {port}")


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


def run_with_rss(argv: list[str], env: dict, timeout: float = 600) -> tuple[float, int, float]:
    """Runs argv and returns (wall seconds, peak RSS KiB, CPU seconds user + sys) using wait4 on that child alone."""
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
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def parse_wrk(output: str) -> dict:
    """Requests/s, latency percentiles (ms) and non-2xx count from `wrk --latency` output."""
    result: dict = {"non2xx": 0, "errors": 0}
    units = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    in_distribution = False
    for line in output.splitlines():
        words = line.split()
        if line.startswith("Requests/sec:"):
            result["rate"] = float(words[1])
        elif line.startswith("  Latency Distribution"):
            in_distribution = True
        elif in_distribution and len(words) == 2 and words[0].endswith("%"):
            value = words[1]
            unit = next(u for u in ("us", "ms", "s") if value.endswith(u))
            result[f"p{words[0][:-1]}"] = float(value[: -len(unit)]) * units[unit]
        elif "Non-2xx or 3xx responses:" in line:
            result["non2xx"] = int(words[-1])
        elif line.strip().startswith("Socket errors:"):
            result["errors"] = sum(int(part.split()[-1]) for part in line.split(":", 1)[1].split(","))
        elif in_distribution and not words:
            in_distribution = False
    return result


def run_wrk(url: str, connections: int, seconds: float, delay_ms: float, run: str) -> dict:
    wrk = shutil.which("wrk")
    if not wrk:
        sys.exit("bench: wrk not found; install Debian's wrk (scripts/install-deps.sh bench)")
    completed = subprocess.run(
        [wrk, "-t2", f"-c{connections}", f"-d{int(seconds)}s", "--latency", "-s", str(REPO / "scripts/bench-sendoobcode.lua"), url],
        env={**os.environ, "DELAY_MS": f"{delay_ms:.3f}", "RUN": run}, capture_output=True, text=True, timeout=seconds + 60, check=True)
    return parse_wrk(completed.stdout)


# One client address sends everything in the API benchmarks: the per-address abuse limits would refuse it (they are not
# what is measured).
NO_ABUSE_LIMITS = {f"HERALD_LIMITS_{limit}": "0"
                   for limit in ("IP_SENDS_PER_MINUTE", "IP_SENDS_PER_HOUR", "ACCOUNT_SENDS_PER_HOUR", "PROJECT_SENDS_PER_HOUR")}


def bench_api(herald: str, base_env: dict, work: Path, rate: float, seconds: float) -> list[str]:
    """sendOobCode against `herald serve`, closed loop and paced at `rate`; returns the report lines."""
    port = free_port()
    env = {**base_env, "HERALD_DATABASE_PATH": str(work / "api.sqlite"), "HERALD_SERVER_HOST": "127.0.0.1",
           "HERALD_SERVER_PORT": str(port)}
    env.pop("HERALD_WORKER_BATCH_SIZE")  # the default claim (50 rows) holds the ledger's writer for less than the 200 above
    env.update(NO_ABUSE_LIMITS)
    log = tempfile.TemporaryFile()
    server = subprocess.Popen([herald, "serve"], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for_port(port, timeout=30)
        url = f"http://127.0.0.1:{port}/v1/accounts:sendOobCode?key=demo-api-key"
        connections = 16
        run_wrk(url, connections, 3, 0, "warm")
        closed = run_wrk(url, connections, seconds, 0, "closed")
        # wrk waits DELAY_MS after each reply (whole milliseconds mixed to make the fraction, see the script):
        # calibrate the delay so the connections together make `rate`, in two trials.
        delay = 1000.0 * connections / rate
        for trial_number in (1, 2):
            trial = run_wrk(url, connections, 5, delay, f"trial{trial_number}")
            delay = max(0.0, delay - (1000.0 * connections / trial["rate"] - 1000.0 * connections / rate))
        paced = run_wrk(url, connections, seconds, delay, "paced")
        with sqlite3.connect(work / "api.sqlite") as db:
            # One statement, one snapshot: requests still in flight when wrk stopped may queue rows between two reads.
            queued, sent = db.execute("SELECT COUNT(*), COALESCE(SUM(state = 'sent'), 0) FROM outbox").fetchone()
    finally:
        server.terminate()
        server.wait(timeout=30)
    def line(name: str, result: dict) -> str:
        return (f"{name:<27} {result['rate']:>8,.0f} req/s | p50 {result['p50']:.2f} ms | p90 {result['p90']:.2f} ms | "
                f"p99 {result['p99']:.2f} ms | non-2xx {result['non2xx']} | socket errors {result['errors']}")
    return [
        line("sendOobCode closed loop", closed),
        line(f"sendOobCode paced {rate:,.0f}/s", paced) + " (target p99 <= 5 ms)",
        f"{'':<27} {connections} connections (wrk); the embedded worker had sent {sent:,} of {queued:,} queued by the end",
    ]


def bench_accounts(herald: str, base_env: dict, work: Path, rows: int, plaintext_rows: int) -> list[str]:
    """(f): a Firebase export of `rows` users with SCRYPT hashes, then `plaintext_rows` plaintext passwords."""
    import base64
    import json
    import random

    rng = random.Random(7)
    def b64(size: int) -> str:
        return base64.b64encode(rng.randbytes(size)).decode()
    export = work / "firebase-users.json"
    with export.open("w") as out:
        out.write('{"users": [\n')
        for i in range(rows):
            user = {"localId": f"fb{i:08d}", "email": f"member{i}@example.com", "emailVerified": i % 2 == 0,
                    "passwordHash": b64(64), "salt": b64(12), "displayName": f"Member {i}",
                    "createdAt": str(1_600_000_000_000 + i), "lastSignedInAt": str(1_700_000_000_000 + i)}
            if i % 10 == 0:
                user["providerUserInfo"] = [{"providerId": "google.com", "rawId": f"g{i}", "email": f"member{i}@example.com"}]
            out.write(("," if i else "") + json.dumps(user) + "\n")
        out.write("]}\n")
    config = work / "hash-config.txt"
    config.write_text("hash_config {\n  algorithm: SCRYPT,\n  base64_signer_key: " + b64(64) + ",\n"
                      "  base64_salt_separator: Bw==,\n  rounds: 8,\n  mem_cost: 14,\n}\n")
    database = work / "accounts.sqlite"
    env = {**base_env, "HERALD_DATABASE_PATH": str(database), "HERALD_ACCOUNTS_OWNER": "herald"}
    seconds, peak, cpu = run_with_rss([herald, "accounts", "import", str(export), "--hash-config", str(config)], env)
    with sqlite3.connect(database) as db:
        stored = db.execute("SELECT COUNT(*) FROM accounts WHERE password_hash LIKE 'firebase-scrypt$%'").fetchone()[0]
    if stored != rows:
        sys.exit(f"bench: the Firebase import stored {stored} hashed accounts, expected {rows}")
    lines = [f"Firebase user import        {rows / seconds:,.0f} users/s: {rows:,} SCRYPT users in {seconds:.1f} s "
             f"(target < 10 s for 100,000), peak RSS {peak / 1024:.1f} MiB"]
    if plaintext_rows:
        plain = work / "plaintext.csv"
        plain.write_text("email,password,displayName\n" + "".join(f"plain{i}@example.com,secret-{i:06d},Plain {i}\n"
                                                                    for i in range(plaintext_rows)))
        seconds, peak, cpu = run_with_rss([herald, "accounts", "import", str(plain)], env)
        lines.append(f"plaintext account import    {plaintext_rows / seconds:,.0f} users/s: {plaintext_rows:,} passwords hashed "
                     f"in {seconds:.1f} s on {cpu / seconds:.1f} of {os.cpu_count()} cores, peak RSS {peak / 1024:.1f} MiB")
    database.unlink()
    return lines


def psql(url: str, schema: str, sql: str) -> str:
    out = subprocess.run(["psql", url, "-Atqc", f"SET search_path = {schema}; {sql}"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def bench_postgres(herald: str, base_env: dict, url: str, recipients: Path, n: int, workers_list: list[int],
                   connections: int) -> list[str]:
    """Queues n emails into a fresh PostgreSQL schema, then drains them with W workers started together."""
    lines = []
    for workers in workers_list:
        schema = f"bench_{os.getpid()}_{workers}"
        env = {**base_env, "HERALD_DATABASE_URL": f"{url}?schema={schema}"}
        queue_seconds = run_measured([herald, "send", "verify-email", "--recipients", str(recipients),
                                      "--continue-url", "https://localhost/welcome"], env=env)
        started = time.monotonic()
        processes = [subprocess.Popen([herald, "worker", "--until-empty", "--concurrency", str(connections)], env=env,
                                      stdout=subprocess.DEVNULL) for _ in range(workers)]
        cpu = 0.0
        for process in processes:
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            cpu += usage.ru_utime + usage.ru_stime
            if process.returncode != 0:
                sys.exit(f"bench: a PostgreSQL worker exited {process.returncode}")
        seconds = time.monotonic() - started
        sent = int(psql(url, schema, "SELECT COUNT(*) FROM outbox WHERE state = 'sent'"))
        attempts = int(psql(url, schema, "SELECT COUNT(*) FROM delivery_attempts WHERE outcome = 'sent'"))
        if sent != n or attempts < n:
            sys.exit(f"bench: PostgreSQL ledger shows {sent} sent rows and {attempts} sent attempts, expected {n}")
        psql(url, "public", f"DROP SCHEMA {schema} CASCADE")
        lines.append(f"PostgreSQL, {workers} worker(s) x {connections} connection(s): herald {n / seconds:,.0f} msg/s "
                     f"(ledger: {sent} sent, {attempts - sent} duplicate attempts) | queue {n / queue_seconds:,.0f} msg/s | "
                     f"worker CPU {cpu / n * 1e6:.0f} µs/msg")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", default=str(REPO / ".build/release/herald"))
    parser.add_argument("-n", type=int, default=20000, help="messages per run (>= 20000 for the target)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 4], help="connection counts to measure")
    parser.add_argument("--import-rows", type=int, default=1_000_000, help="campaign CSV rows for the import benchmark (0 skips it)")
    parser.add_argument("--account-rows", type=int, default=100_000,
                        help="users of the Firebase export the account import benchmark reads (0 skips it)")
    parser.add_argument("--plaintext-rows", type=int, default=2_000, help="plaintext-password accounts imported after it")
    parser.add_argument("--api-rate", type=float, default=2000, help="paced sendOobCode requests/s (0 skips the API benchmark)")
    parser.add_argument("--api-seconds", type=float, default=15, help="length of each measured wrk run")
    parser.add_argument("--pg-workers", type=int, nargs="*", default=[1, 3],
                        help="worker processes draining a PostgreSQL ledger together (needs HERALD_TEST_POSTGRES)")
    parser.add_argument("--dkim", choices=["off", "rsa", "both"], default="off",
                        help="sign every message: rsa-sha256 (2048 bits), or rsa-sha256 and ed25519-sha256")
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

        if args.dkim != "off":
            base_env["HERALD_DKIM_DOMAIN"] = "herald-demo.example"
            for algorithm, selector, variable in (("rsa", "herald", "RSA"), ("ed25519", "herald-ed", "ED25519")):
                if algorithm == "ed25519" and args.dkim != "both":
                    continue
                key = work / f"dkim-{algorithm}.pem"
                subprocess.run([args.herald, "dkim", "keygen", "--domain", "herald-demo.example", "--selector", selector,
                                "--algorithm", algorithm, "--out", str(key)], check=True, stdout=subprocess.DEVNULL)
                base_env[f"HERALD_DKIM_{variable}_KEY_FILE"] = str(key)
            base_env["HERALD_DKIM_ED25519_SELECTOR"] = "herald-ed"

        preview = work / "preview.eml"
        subprocess.run([args.herald, "templates", "preview", "verify-email", "--out", str(preview)],
                       cwd=REPO, env=base_env, check=True, stdout=subprocess.DEVNULL)
        size = preview.stat().st_size
        recipients = work / "recipients.txt"
        recipients.write_text("".join(f"user{i}@example.com\n" for i in range(args.n)))

        table = []
        for connections in args.connections:
            source_rates, herald_rates, queue_rates, rss, cpu = [], [], [], [], []
            for run in range(1, args.runs + 1):
                seconds = run_measured([sbin("smtp-source"), "-s", str(connections), "-m", str(args.n), "-l", str(size), "-d",
                                        "-f", "bench@herald.test", "-t", "rcpt@example.com", f"127.0.0.1:{port}"])
                source_rates.append(args.n / seconds)

                database = work / f"c{connections}-run{run}.sqlite"
                env = {**base_env, "HERALD_DATABASE_PATH": str(database)}
                queue_seconds = run_measured([args.herald, "send", "verify-email", "--recipients", str(recipients),
                                              "--continue-url", "https://localhost/welcome"], env=env)
                queue_rates.append(args.n / queue_seconds)
                send_seconds, peak, cpu_seconds = run_with_rss(
                    [args.herald, "worker", "--until-empty", "--concurrency", str(connections)], env)
                with sqlite3.connect(database) as db:
                    sent = db.execute("SELECT COUNT(*) FROM outbox WHERE state = 'sent'").fetchone()[0]
                    attempts = db.execute("SELECT COUNT(*) FROM delivery_attempts WHERE outcome = 'sent'").fetchone()[0]
                if sent != args.n or attempts != args.n:
                    sys.exit(f"bench: ledger shows {sent} sent rows and {attempts} sent attempts, expected {args.n}")
                database.unlink()
                herald_rates.append(args.n / send_seconds)
                rss.append(peak)
                cpu.append(cpu_seconds / args.n * 1e6)
                print(f"{connections} connection(s), run {run}: smtp-source {source_rates[-1]:,.0f} msg/s | herald "
                      f"{herald_rates[-1]:,.0f} msg/s (ledger: {sent} sent) | queue {queue_rates[-1]:,.0f} msg/s | "
                      f"worker CPU {cpu[-1]:.0f} µs/msg | peak RSS {peak / 1024:.1f} MiB", flush=True)
            table.append((connections, statistics.median(source_rates), statistics.median(herald_rates),
                         statistics.median(queue_rates), statistics.median(cpu), max(rss)))

        import_line = None
        if args.import_rows:
            csv_path = work / "campaign.csv"
            with csv_path.open("w") as out:
                out.write("email,display_name,locale,plan\n")
                for i in range(args.import_rows):
                    out.write(f"user{i}@example.com,User {i},{'pl' if i % 3 == 0 else 'en'},p{i % 7}\n")
            env = {**base_env, "HERALD_DATABASE_PATH": str(work / "import.sqlite")}
            seconds, peak, _ = run_with_rss([args.herald, "campaign", "create", "bench", "--action", "verify-email",
                                          "--recipients", str(csv_path)], env)
            with sqlite3.connect(work / "import.sqlite") as db:
                rows = db.execute("SELECT COUNT(*) FROM outbox WHERE campaign_id IS NOT NULL").fetchone()[0]
            if rows != args.import_rows:
                sys.exit(f"bench: import stored {rows} rows, expected {args.import_rows}")
            import_line = (f"campaign import             {args.import_rows / seconds:,.0f} rows/s for {args.import_rows:,} CSV rows "
                           f"(target >= 150,000), peak RSS {peak / 1024:.1f} MiB")

        account_lines = bench_accounts(args.herald, base_env, work, args.account_rows, args.plaintext_rows) if args.account_rows else []
        api_lines = bench_api(args.herald, base_env, work, args.api_rate, args.api_seconds) if args.api_rate else []
        postgres_url = os.environ.get("HERALD_TEST_POSTGRES")
        postgres_lines = []
        if postgres_url and args.pg_workers:
            postgres_lines = bench_postgres(args.herald, base_env, postgres_url, recipients, args.n, args.pg_workers, 1)
        elif args.pg_workers:
            postgres_lines = ["PostgreSQL: skipped (no HERALD_TEST_POSTGRES; `make bench` starts a cluster)"]

        print()
        signing = {"off": "unsigned", "rsa": "DKIM rsa-sha256", "both": "DKIM rsa-sha256 + ed25519-sha256"}[args.dkim]
        print(f"messages per run: {args.n} rendered verification emails of {size} bytes ({signing}); medians of {args.runs} runs")
        print(f"{'connections':>11} | {'smtp-source':>13} | {'herald worker':>13} | {'ratio':>5} | {'target':>6} | "
              f"{'CPU/msg':>8} | {'peak RSS':>9} | {'queueing':>12}")
        for connections, source, herald, queued, per_message, peak in table:
            target = {1: "0.90", 4: "0.70"}.get(connections, "-")
            print(f"{connections:>11} | {source:>9,.0f} /s | {herald:>9,.0f} /s | {herald / source:>5.2f} | {target:>6} | "
                  f"{per_message:>5.0f} µs | {peak / 1024:>5.1f} MiB | {queued:>8,.0f} /s")
        print("worker CPU per message: user + sys of `herald worker` (target <= 100 µs); peak RSS target <= 100 MB")
        if import_line:
            print(import_line)
        for line in account_lines:
            print(line)
        for line in api_lines:
            print(line)
        for line in postgres_lines:
            print(line)
    finally:
        sink.terminate()
        sink.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

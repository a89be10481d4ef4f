#!/usr/bin/env python3
"""The front door's memory under hostile requests: a bounded soak, part of `make bench`.

Starts `herald serve --no-worker` on a free loopback port (SQLite in a temporary directory), then sends,
each on its own connection, N requests of each shape the security probe used:

  query   GET /health?pad=<SIZE × a>           (a request line over the head limit)
  header  GET /health with one SIZE-byte header
  many    GET /health with SIZE/100 headers of ~100 bytes
  body    POST /health, Connection: close, a SIZE-byte body nobody reads

and prints the server's resident memory (VmRSS) before, every few thousand requests, and after, with
the growth per request. Before the fix, `query` grew ~116 KiB per request without end (15,000 requests:
50 MB → 1.55 GB). It exits 1 if any shape grows more than --max-growth-kib per request on average or
the server ends above --max-rss-mib, so a regression fails the bench.

usage: soak-headers.py --herald .build/release/herald [--count 15000] [--size 300000] [--kinds query,header,many,body]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

READY = re.compile(r"READY http://127\.0\.0\.1:(\d+)")


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def payload(kind: str, size: int) -> bytes:
    if kind == "query":
        return b"GET /health?pad=" + b"a" * size + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    if kind == "header":
        return b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"a" * size + b"\r\n\r\n"
    if kind == "many":
        fields = b"".join(b"X-H%05d: %s\r\n" % (i, b"b" * 90) for i in range(size // 100))
        return b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + fields + b"\r\n"
    if kind == "body":
        return b"POST /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % size + b"c" * size
    raise SystemExit(f"unknown kind {kind}")


def one_request(port: int, data: bytes) -> str:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass  # answered (or refused) before the whole request was sent
        answer = b""
        while len(answer) < 64:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            answer += chunk
        return answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "none"
    finally:
        sock.close()


def soak(port: int, pid: int, kind: str, count: int, size: int, threads: int = 4) -> dict:
    data = payload(kind, size)
    statuses: dict = {}
    lock = threading.Lock()
    sent = [0]
    samples = []
    before = rss_kib(pid)
    peak = before

    def work() -> None:
        nonlocal peak
        while True:
            with lock:
                if sent[0] >= count:
                    return
                sent[0] += 1
                n = sent[0]
            status = one_request(port, data)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if n % 2500 == 0:
                    rss = rss_kib(pid)
                    peak = max(peak, rss)
                    samples.append((n, rss))

    started = time.monotonic()
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    took = time.monotonic() - started
    time.sleep(3)  # lingering closes end within 2 s
    after = rss_kib(pid)
    return {"kind": kind, "count": count, "seconds": took, "statuses": statuses, "before": before,
            "peak": max(peak, after), "after": after, "per_request": (after - before) / count, "samples": samples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", required=True)
    parser.add_argument("--count", type=int, default=15000)
    parser.add_argument("--size", type=int, default=300_000)
    parser.add_argument("--kinds", default="query,header,many,body")
    parser.add_argument("--max-growth-kib", type=float, default=2.0)
    parser.add_argument("--max-rss-mib", type=float, default=150.0)
    args = parser.parse_args()
    args.herald = str(Path(args.herald).resolve())

    with tempfile.TemporaryDirectory(prefix="herald-soak-") as scratch:
        config = Path(scratch) / "herald.yaml"
        config.write_text(
            f"database:\n  path: {scratch}/herald.sqlite\nserver:\n  host: 127.0.0.1\n  port: 0\n"
            "smtp:\n  url: smtp://127.0.0.1:9\n  from: soak@herald.example\n"
            f"templates:\n  directory: {Path(__file__).resolve().parents[1] / 'templates'}\n"
            "links:\n  actionUrl: https://app.example.com/__/auth/action\n  authorizedDomains: [app.example.com]\n",
            encoding="utf-8")
        server = subprocess.Popen([args.herald, "serve", "--no-worker", "--config", str(config)], cwd=scratch,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = None
            deadline = time.monotonic() + 30
            while port is None and time.monotonic() < deadline:
                line = server.stdout.readline()
                if not line:
                    break
                if match := READY.search(line):
                    port = int(match.group(1))
            if port is None:
                print("herald serve did not start", file=sys.stderr)
                return 1
            threading.Thread(target=lambda: server.stdout.read(), daemon=True).start()
            failed = False
            print(f"{'shape':<8} {'requests':>8} {'req/s':>7} {'RSS before':>11} {'peak':>9} {'after':>9} "
                  f"{'KiB/request':>12}  answers")
            for kind in args.kinds.split(","):
                result = soak(port, server.pid, kind, args.count, args.size)
                print(f"{kind:<8} {result['count']:>8} {result['count'] / result['seconds']:>7.0f} "
                      f"{result['before'] / 1024:>9.1f}MB {result['peak'] / 1024:>7.1f}MB {result['after'] / 1024:>7.1f}MB "
                      f"{result['per_request']:>12.2f}  {result['statuses']}", flush=True)
                if result["per_request"] > args.max_growth_kib or result["after"] / 1024 > args.max_rss_mib:
                    failed = True
                if server.poll() is not None:
                    print(f"herald serve exited {server.returncode} during the soak", file=sys.stderr)
                    return 1
            fds = len(os.listdir(f"/proc/{server.pid}/fd"))
            print(f"open file descriptors after the soak: {fds}")
            if failed:
                print(f"memory grew beyond {args.max_growth_kib} KiB/request or {args.max_rss_mib} MiB", file=sys.stderr)
                return 1
            return 0
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    sys.exit(main())

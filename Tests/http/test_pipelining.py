"""Pipelined clients at the front door of `herald serve`: one client that pipelines requests on many
connections without reading the answers may neither starve other clients nor pin the server's memory.

The attacker is 127.0.0.1 on 128 connections (the default per-client cap), each writing
`GET /health` x 400 per write, as fast as the server takes them, never reading. Another client
(127.0.0.2: loopback has all of 127/8, and Herald counts clients by address) meanwhile makes ordinary
requests, each of which must be answered within a second. The server's resident memory (VmRSS) must
stay bounded during the attack and come back once the attacker's connections close."""

from __future__ import annotations

import multiprocessing
import selectors
import socket
import threading
import time

from http_support import HTTP_TIMEOUT

ATTACKERS = 128
PIPELINE = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 400
ATTACK_SECONDS = 12

# What the server may hold for the attack on top of what it held before. Per connection Herald keeps
# a few requests in flight, one read of at most 64 KiB being decoded, and at most the write buffer's
# high-water mark (64 KiB) of answers: well under 0.25 MiB, so 128 connections need under 32 MiB.
# The bound leaves as much again for the allocator's slack. (Before the server held these back, the
# same attack grew the process by about 2.3 MiB per connection, ~290 MiB.)
PEAK_GROWTH_MIB = 64
# Once the connections are gone, what is left over the baseline (allocator arenas keep some).
RESIDUAL_GROWTH_MIB = 24


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def one_request(port: int) -> tuple[int, float]:
    """A fresh connection from another client (127.0.0.2): the status of `GET /health` and how long it took."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 "), data[:200]
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def flood(port: int, seconds: float) -> None:
    """The attacker: ATTACKERS connections from 127.0.0.1, each sent PIPELINE whenever it takes more, never read."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT) for _ in range(ATTACKERS)]
    unsent = {}
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_WRITE)
            unsent[sock] = memoryview(PIPELINE)
        deadline = time.monotonic() + seconds
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                sock = key.fileobj
                try:
                    sent = sock.send(unsent[sock])
                except BlockingIOError:
                    continue
                except OSError:
                    selector.unregister(sock)  # the server closed it
                    continue
                unsent[sock] = unsent[sock][sent:] or memoryview(PIPELINE)


def test_pipelining_client_neither_starves_others_nor_pins_memory(server):
    srv = server(server={"maxConnectionsPerClient": ATTACKERS})  # the defaults otherwise
    pid = srv.proc.pid
    # Warm up: the first requests allocate what the server keeps for its life anyway.
    for _ in range(20):
        assert one_request(srv.port)[0] == 200
    baseline = rss_mib(pid)

    # The attacker runs in a process of its own, so the other client's timings are not its Python threads'.
    attacker = multiprocessing.Process(target=flood, args=(srv.port, ATTACK_SECONDS + 5), daemon=True)
    attacker.start()
    latencies: list[float] = []
    samples = [baseline]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            samples.append(rss_mib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        time.sleep(1)  # the connections are open and their pipelines full
        started = time.monotonic()
        while time.monotonic() - started < ATTACK_SECONDS:
            try:
                status, took = one_request(srv.port)
                assert status == 200
            except OSError:
                took = float("inf")  # no answer within 5 s
            latencies.append(took)
            time.sleep(0.1)
    finally:
        attacker.terminate()  # its sockets close with it
        attacker.join(timeout=10)
        sampling.set()
        sampler.join()
    peak = max(samples)

    print(f"baseline {baseline:.0f} MiB, peak {peak:.0f} MiB; {len(latencies)} requests, slowest {max(latencies):.3f} s,"
          f" median {sorted(latencies)[len(latencies) // 2]:.3f} s")
    assert max(latencies) < 1, sorted(latencies)[-5:]
    assert peak - baseline < PEAK_GROWTH_MIB, (baseline, peak)

    # The memory comes back once the connections are gone.
    deadline = time.monotonic() + 10
    while (after := rss_mib(pid)) - baseline >= RESIDUAL_GROWTH_MIB:
        assert time.monotonic() < deadline, (baseline, peak, after)
        time.sleep(0.5)
    print(f"after the attack {after:.0f} MiB")
    assert one_request(srv.port)[0] == 200

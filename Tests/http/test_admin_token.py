"""The admin token at the front door: wrong bearer tokens count against the client's network like failed
password sign-ins (`limits.ipSignInFailuresPerHour`, then 429), in one count with the console's sign-in form;
the right token is always accepted, even from a network that is locked out; and a token too short to guard
anything stops start-up with one line."""

from __future__ import annotations

import socket
import subprocess

import requests

from helpers import CaptureServer, deep_merge, herald_env
from http_support import ADMIN_PREFIX, ADMIN_TOKEN, BASE_OVERRIDES, HTTP_TIMEOUT, write_serve_config

FAILURES_ALLOWED = 5
LOOKUP = {"email": ["nobody@example.com"]}


def suppressions(srv, token: str) -> requests.Response:
    return requests.get(srv.url + "/admin/suppressions", headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT)


def test_wrong_bearer_tokens_lock_the_network_out_but_never_the_right_token(server):
    srv = server(limits={"ipSignInFailuresPerHour": FAILURES_ALLOWED})
    for n in range(FAILURES_ALLOWED):
        resp = srv.admin("accounts:lookup", LOOKUP, token=f"guess-{n}")
        assert resp.status_code == 401, resp.text
    for n in range(20):
        resp = srv.admin("accounts:lookup", LOOKUP, token=f"guess-more-{n}")
        assert resp.status_code == 429, resp.text
        assert resp.json()["error"]["message"].startswith("TOO_MANY_ATTEMPTS_TRY_LATER"), resp.text
    # The admin pages count in the same bucket, and answer 429 too.
    resp = suppressions(srv, "guess-again")
    assert resp.status_code == 429, resp.text
    # The right token still works from the locked-out address, on every admin route.
    assert srv.admin("accounts:lookup", LOOKUP).status_code == 200
    assert suppressions(srv, ADMIN_TOKEN).status_code == 200
    # Another network (127.0.0.2 is loopback too; a raw socket, to choose the source address) is not locked out.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10, source_address=("127.0.0.2", 0)) as sock:
        body = b'{"email":["nobody@example.com"]}'
        sock.sendall(b"POST " + ADMIN_PREFIX.encode() + b"accounts:lookup HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
                     b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


def test_a_short_admin_token_stops_start_up_with_one_line(herald_bin, tmp_path):
    capture = CaptureServer()
    capture.start()
    try:
        for weak in ("a", "short-but-not-32-bytes"):
            config = write_serve_config(tmp_path, capture, deep_merge(BASE_OVERRIDES, {"server": {"adminToken": weak}}))
            run = subprocess.run([str(herald_bin), "serve", "--config", str(config)], cwd=tmp_path, env=herald_env(),
                                 capture_output=True, text=True, timeout=60)
            assert run.returncode != 0, run
            lines = [line for line in run.stderr.splitlines() if line.strip()]
            assert len(lines) == 1, run.stderr
            assert "server.adminToken" in lines[0] and "at least 32 bytes" in lines[0], lines[0]
            assert "READY" not in run.stdout
    finally:
        capture.stop()

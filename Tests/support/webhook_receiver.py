"""A webhook receiver for the tests: `http.server` on loopback that checks every `Herald-Signature`
(HMAC-SHA256 of "<t>.<body>", `t` within five minutes) and records the events it accepts."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "s3cret-" + "x" * 40
OTHER_SECRET = "other-" + "y" * 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """A webhook endpoint: verifies the signature with `secret`, records each event, answers `status`."""

    def __init__(self, secret: str, port: int | None = None, status: int = 200) -> None:
        self.secret = secret.encode()
        self.port = port or free_port()
        self.status = status
        self.events: list = []
        self.requests = 0
        self.bad_signatures: list = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                signature = self.headers.get("Herald-Signature", "")
                parts = dict(p.split("=", 1) for p in signature.split(",") if "=" in p)
                expected = hmac.new(receiver.secret, parts.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
                with receiver.lock:
                    receiver.requests += 1
                    status = receiver.status
                    if not hmac.compare_digest(expected, parts.get("v1", "")) or abs(time.time() - int(parts.get("t", "0"))) > 300:
                        receiver.bad_signatures.append(signature)
                        status = 400
                    elif status < 300:
                        event = json.loads(body)
                        assert self.headers["Herald-Event-Id"] == event["id"]
                        assert self.headers["Content-Type"] == "application/json"
                        receiver.events.append(event)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"no")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def of_type(self, kind: str) -> list:
        with self.lock:
            return [e for e in self.events if e["type"] == kind]

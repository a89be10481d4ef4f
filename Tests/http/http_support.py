"""Plain helpers for the `herald serve` suite (fixtures live in conftest.py).

Builds on Tests/integration/helpers.py (config writing, capture server, link
parsing, read-only DB queries); conftest.py puts that directory and
Tests/support on sys.path before this module is imported.
"""

from __future__ import annotations

import html.parser
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlencode, urlsplit

import pytest
import requests
import yaml

from helpers import (
    API_KEY, by_recipient, database_files, db_path, deep_merge, herald_env, parse_link, query, write_config,
)

PROJECT = "herald-demo"
ADMIN_TOKEN = "test-admin-token-7f3c-0b5e9a41d62c8e37"
HTTP_TIMEOUT = 10  # seconds, every HTTP call
START_TIMEOUT = 30  # seconds until READY
STOP_TIMEOUT = 20  # seconds from SIGTERM to exit
MAIL_TIMEOUT = 20  # seconds for a queued message to reach the capture server
CONTINUE = "https://app.example.com/finish?step=2"

# The four path prefixes every API method is served under.
PREFIXES = [
    "/v1/",
    "/identitytoolkit.googleapis.com/v1/",
    f"/v1/projects/{PROJECT}/",
    f"/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/",
]
ADMIN_PREFIX = f"/v1/projects/{PROJECT}/"

KIND = {
    "sendOobCode": "identitytoolkit#GetOobConfirmationCodeResponse",
    "signInWithEmailLink": "identitytoolkit#EmailLinkSigninResponse",
    "resetPassword": "identitytoolkit#ResetPasswordResponse",
    "update": "identitytoolkit#SetAccountInfoResponse",
    "createAuthUri": "identitytoolkit#CreateAuthUriResponse",
    "signUp": "identitytoolkit#SignupNewUserResponse",
    "signInWithPassword": "identitytoolkit#VerifyPasswordResponse",
    "lookup": "identitytoolkit#GetAccountInfoResponse",
}

# Base config overrides of every server; tests deep-merge theirs on top. The API suite runs
# Firebase's semantics: Herald owns the accounts.
BASE_OVERRIDES: dict = {
    "accounts": {"owner": "herald"},
    "server": {"host": "127.0.0.1", "port": 0, "adminToken": ADMIN_TOKEN},
    "worker": {"pollInterval": "100ms"},
    # Every test client is 127.0.0.1: the abuse limits are off unless a test turns them on (test_abuse.py).
    "limits": {"ipSendsPerMinute": 0, "ipSendsPerHour": 0, "ipBadCodesPerMinute": 0, "accountSendsPerHour": 0,
               "projectSendsPerHour": 0, "ipSignUpsPerHour": 0, "signInFailuresPerAccount": 0, "ipSignInFailuresPerHour": 0},
}

def write_serve_config(cwd: Path, capture, settings: dict) -> Path:
    """write_config(cwd, capture, **settings), except that the `server` section
    (which write_config's own `server` parameter - the capture server - shadows
    as a keyword) is merged in afterwards."""
    settings = dict(settings)
    server_section = settings.pop("server", None)
    path = write_config(cwd, capture, **settings)
    if server_section is not None:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        config = deep_merge(config, {"server": server_section})
        path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


_READY_RE = re.compile(r"^READY (http://127\.0\.0\.1:(\d+))\s*$")


# --------------------------------------------------------------------------- the server process
class HeraldServer:
    """A running `herald serve`: .url, .config, .db_path, .capture, plus HTTP helpers."""

    def __init__(self, binary: Path, config: Path, cwd: Path, capture, args: tuple = (),
                 settings: Optional[dict] = None) -> None:
        self.binary, self.config, self.cwd, self.capture = Path(binary), Path(config), Path(cwd), capture
        self.settings = settings or {}
        self.db_path = db_path(cwd)
        self.argv = [str(self.binary), "serve", *map(str, args), "--config", str(self.config)]
        self.stderr_path = self.cwd / "serve.stderr"
        self.url: Optional[str] = None
        self.port: Optional[int] = None
        self.returncode: Optional[int] = None
        self._stdout_lines: list = []
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._stderr_file = open(self.stderr_path, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv, cwd=self.cwd, env=herald_env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=self._stderr_file,
            )
        except OSError as exc:
            self._stderr_file.close()
            self.returncode = -1
            pytest.fail(f"could not start {' '.join(self.argv)}: {exc}", pytrace=False)
        # Keep draining stdout for the whole life of the process so a chatty
        # server never blocks on a full pipe.
        self._reader = threading.Thread(target=self._read_stdout, name="herald-serve-stdout", daemon=True)
        self._reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._stdout_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> "HeraldServer":
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                self.returncode = self.proc.returncode
                pytest.fail(f"herald serve printed no `READY http://127.0.0.1:<port>` line within "
                            f"{timeout}s\n{self.describe()}", pytrace=False)
            try:
                line = self._lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is None:  # stdout closed: the process is gone
                try:
                    code = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = "still running with stdout closed"
                self.kill()
                self.returncode = self.proc.returncode
                pytest.fail(
                    f"herald serve exited ({code}) before printing `READY http://127.0.0.1:<port>`. "
                    f"Does {self.binary} have the `serve` subcommand yet, and does it accept this "
                    f"config (server:, policy: sections)?\n{self.describe()}",
                    pytrace=False,
                )
            match = _READY_RE.match(line)
            if match:
                self.url, self.port = match.group(1), int(match.group(2))
                return self

    def describe(self) -> str:
        return (f"$ {' '.join(self.argv)}\n(cwd {self.cwd})\n--- config\n"
                f"{self.config.read_text(encoding='utf-8')}--- stdout\n{self.stdout_text()}\n"
                f"--- stderr\n{self.stderr_text()}")

    def stdout_text(self) -> str:
        return "\n".join(self._stdout_lines)

    def stderr_text(self) -> str:
        if not self._stderr_file.closed:
            self._stderr_file.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, wait, return the exit status (killing it after `timeout`)."""
        if self.returncode is not None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                self.returncode = -9
                self._close()
                pytest.fail(f"herald serve did not exit within {timeout}s of SIGTERM\n{self.describe()}",
                            pytrace=False)
        self.returncode = self.proc.returncode
        self._close()
        return self.returncode

    def stop_cleanly(self) -> None:
        code = self.stop()
        assert code == 0, f"herald serve exited {code} on SIGTERM (expected 0)\n{self.describe()}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=5)
        if not self._stderr_file.closed:
            self._stderr_file.close()

    # ----------------------------------------------------------------- HTTP: API
    def post(self, method: str, body: Any = None, *, key: Optional[str] = API_KEY,
             token: Optional[str] = None, headers: Optional[dict] = None, prefix: str = "/v1/",
             data: Any = None, params: Optional[dict] = None) -> requests.Response:
        """POST {prefix}{method}; JSON `body` (or raw `data`), `?key=` unless key is None,
        `Authorization: Bearer token` if given."""
        params = dict(params or {})
        if key is not None:
            params["key"] = key
        hdrs = dict(headers or {})
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        kwargs: dict = {"params": params, "headers": hdrs, "timeout": HTTP_TIMEOUT, "allow_redirects": False}
        if data is not None:
            kwargs["data"] = data
        elif body is not None:
            kwargs["json"] = body
        return requests.post(self.url + prefix + method, **kwargs)

    def admin(self, method: str, body: Any = None, *, token: str = ADMIN_TOKEN,
              prefix: str = ADMIN_PREFIX, **kwargs) -> requests.Response:
        """An admin call as firebase-admin makes it: project-scoped path, bearer token, no API key."""
        return self.post(method, body, key=None, token=token, prefix=prefix, **kwargs)

    def sign_up(self, email: str, password: str, **extra) -> dict:
        return ok(self.post("accounts:signUp", {"email": email, "password": password, **extra}))

    def sign_in(self, email: str, password: str) -> requests.Response:
        return self.post("accounts:signInWithPassword", {"email": email, "password": password})

    def lookup(self, id_token: str) -> requests.Response:
        return self.post("accounts:lookup", {"idToken": id_token})

    def admin_user(self, email: str) -> Optional[dict]:
        """The account with this email via an admin lookup, or None."""
        body = ok(self.admin("accounts:lookup", {"email": [email]}))
        users = body.get("users") or []
        assert len(users) <= 1, body
        return users[0] if users else None

    def oob(self, request_type: str, email: Optional[str] = None, *, headers: Optional[dict] = None,
            **fields) -> dict:
        """Admin sendOobCode with returnOobLink: {kind, email, oobCode, oobLink}."""
        body = {"requestType": request_type, "returnOobLink": True, **fields}
        if email is not None:
            body["email"] = email
        return ok(self.admin("accounts:sendOobCode", body, headers=headers))

    def send_oob(self, request_type: str, email: Optional[str] = None, *,
                 headers: Optional[dict] = None, **fields) -> requests.Response:
        """Client sendOobCode with the API key (queues an email)."""
        body = {"requestType": request_type, **fields}
        if email is not None:
            body["email"] = email
        return self.post("accounts:sendOobCode", body, headers=headers)

    # ----------------------------------------------------------------- HTTP: pages
    def local(self, link: str) -> str:
        """The same path and query on this server (links name the public actionUrl host)."""
        parts = urlsplit(link)
        return self.url + parts.path + (f"?{parts.query}" if parts.query else "")

    def action_page_url(self, **params) -> str:
        return f"{self.url}/__/auth/action?{urlencode(params)}"

    # ----------------------------------------------------------------- mail and ledger
    def mail_to(self, rcpt: str, count: int = 1, timeout: float = MAIL_TIMEOUT) -> list:
        """Wait until `count` messages reached `rcpt`; returns them (oldest first)."""
        rcpt = rcpt.lower()
        deadline = time.monotonic() + timeout
        while True:
            got = by_recipient(self.capture.messages()).get(rcpt, [])
            if len(got) >= count:
                return got
            if time.monotonic() > deadline:
                pytest.fail(f"{len(got)} of {count} message(s) to {rcpt} arrived within {timeout}s; "
                            f"all recipients: {sorted(by_recipient(self.capture.messages()))}\n"
                            f"--- server stderr\n{self.stderr_text()}")
            time.sleep(0.05)

    def mail_count(self, rcpt: str) -> int:
        return len(by_recipient(self.capture.messages()).get(rcpt.lower(), []))

    def events(self, kind: Optional[str] = None) -> list:
        rows = query(self.db_path, "SELECT * FROM link_events ORDER BY id")
        return [r for r in rows if kind is None or r["kind"] == kind]

    def database_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in database_files(self.db_path))


# --------------------------------------------------------------------------- responses
def _show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code}\n{resp.text[:2000]}"


def ok(resp: requests.Response) -> dict:
    assert resp.status_code == 200, f"expected 200\n{_show(resp)}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), _show(resp)
    body = resp.json()
    assert isinstance(body, dict), _show(resp)
    return body


def assert_envelope(resp: requests.Response, status: int = 400) -> dict:
    """The Firebase error envelope with this status; returns the `error` object."""
    assert resp.status_code == status, f"expected {status}\n{_show(resp)}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), _show(resp)
    try:
        body = resp.json()
    except ValueError:
        pytest.fail(f"error body is not JSON\n{_show(resp)}")
    assert isinstance(body, dict) and set(body) == {"error"}, _show(resp)
    error = body["error"]
    assert error.get("code") == status, _show(resp)
    message = error.get("message")
    assert isinstance(message, str) and message, _show(resp)
    errors = error.get("errors")
    assert isinstance(errors, list) and len(errors) == 1, _show(resp)
    assert errors[0].get("domain") == "global" and errors[0].get("reason") == "invalid", _show(resp)
    return error


def assert_error(resp: requests.Response, code: str, status: int = 400,
                 message: Optional[str] = None) -> str:
    """Exactly {"error":{"code":S,"message":M,"errors":[{"message":M,"domain":"global",
    "reason":"invalid"}]}} with M == code or M starting with "code : "; returns M."""
    error = assert_envelope(resp, status)
    actual = error["message"]
    assert actual == code or actual.startswith(code + " : "), f"expected {code}\n{_show(resp)}"
    if message is not None:
        assert actual == message, _show(resp)
    assert set(error) == {"code", "message", "errors"}, _show(resp)
    assert error["errors"] == [{"message": actual, "domain": "global", "reason": "invalid"}], _show(resp)
    return actual


def error_code(resp: requests.Response) -> Optional[str]:
    try:
        message = resp.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return None
    return message.split(" : ", 1)[0].split(":", 1)[0].strip()


def code_of(link: str) -> str:
    return parse_link(link)["params"]["oobCode"]


def is_jwt(token: Any) -> bool:
    return isinstance(token, str) and re.fullmatch(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", token) is not None


def unique_email(tag: str) -> str:
    return f"{tag}-{os.getpid()}-{time.monotonic_ns()}@x.test".lower()


# --------------------------------------------------------------------------- HTML forms
class _FormParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list = []
        self._current: Optional[dict] = None

    def handle_starttag(self, tag, attrs):
        attrs = {k.lower(): (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self._current = {"method": attrs.get("method", "get").lower(), "action": attrs.get("action", ""),
                             "inputs": []}
            self.forms.append(self._current)
        elif tag in ("input", "button", "textarea") and self._current is not None:
            self._current["inputs"].append(
                {"tag": tag, "name": attrs.get("name"), "type": attrs.get("type", "text").lower(),
                 "value": attrs.get("value", "")})

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def post_form(page_html: str) -> dict:
    """The page's one POST form: {'method', 'action', 'inputs': [...]}."""
    parser = _FormParser()
    parser.feed(page_html)
    forms = [f for f in parser.forms if f["method"] == "post"]
    assert len(forms) == 1, f"expected exactly one <form method=post>, found {len(forms)}:\n{page_html[:3000]}"
    return forms[0]


def hidden_fields(form: dict) -> dict:
    return {i["name"]: i["value"] for i in form["inputs"] if i["type"] == "hidden" and i["name"]}


def field_names(form: dict) -> set:
    return {i["name"] for i in form["inputs"] if i["name"]}


def looks_like_html(resp: requests.Response) -> bool:
    return resp.headers.get("Content-Type", "").startswith("text/html")




# --------------------------------------------------------------------------- storage faults
def health(srv) -> requests.Response:
    """GET /health."""
    return requests.get(f"{srv.url}/health", timeout=HTTP_TIMEOUT)


def assert_unavailable(resp: requests.Response) -> dict:
    """Firebase's 503 envelope while the ledger cannot commit:
    {"error": {"code": 503, "message": "UNAVAILABLE[...]", "errors": [...], "status": "UNAVAILABLE"}};
    returns the `error` object."""
    assert resp.status_code == 503, f"expected 503 UNAVAILABLE\n{_show(resp)}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), _show(resp)
    try:
        body = resp.json()
    except ValueError:
        pytest.fail(f"503 body is not JSON\n{_show(resp)}")
    assert isinstance(body, dict) and set(body) == {"error"}, _show(resp)
    error = body["error"]
    assert set(error) == {"code", "message", "errors", "status"}, _show(resp)
    assert error["code"] == 503 and error["status"] == "UNAVAILABLE", _show(resp)
    assert isinstance(error["message"], str) and error["message"].startswith("UNAVAILABLE"), _show(resp)
    errors = error["errors"]
    assert isinstance(errors, list) and errors, _show(resp)
    assert all(isinstance(e, dict) and isinstance(e.get("message"), str) for e in errors), _show(resp)
    return error


def outbox_rows(db: Path, recipient: str) -> list:
    """The ledger's outbox rows addressed to `recipient` (snapshot query)."""
    return query(db, "SELECT id, recipient, state FROM outbox WHERE lower(recipient) = lower(?)", (recipient,))

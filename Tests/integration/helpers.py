"""Plain helpers for the Herald integration suite (fixtures live in conftest.py).

Test modules import these directly (`from helpers import ...`); pytest puts this
directory on sys.path because it has no __init__.py.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html.parser
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, urlsplit

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
SUPPORT_DIR = REPO_ROOT / "Tests" / "support"
if str(SUPPORT_DIR) not in sys.path:
    sys.path.insert(0, str(SUPPORT_DIR))

from smtp_server import CaptureServer  # noqa: E402  (re-exported for tests)
from make_cert import make_cert  # noqa: E402

# --------------------------------------------------------------------------- config
# The pipeline suite sends mail to addresses no account store knows, so it runs Herald as a
# dispatcher for an app that owns its users (`accounts.owner: app`); tests of Herald-owned
# accounts and their sending rules set `accounts={"owner": "herald"}`.
DEFAULT_CONFIG: dict = {
    "project": {"id": "herald-demo", "apiKey": "demo-api-key", "appName": "Herald Demo"},
    "links": {
        "actionUrl": "https://herald-demo.firebaseapp.com/__/auth/action",
        "authorizedDomains": ["localhost", "herald-demo.firebaseapp.com", "app.example.com"],
        "defaultLocale": "en",
        "lifetime": {
            "signIn": "6h",
            "verifyEmail": "72h",
            "resetPassword": "1h",
            "verifyAndChangeEmail": "72h",
        },
    },
    "smtp": {
        "url": "smtp://127.0.0.1:2525",
        "requireStartTLS": False,
        "username": "",
        "password": "",
        "caFile": "",
        "insecure": False,
        "from": "Herald Demo <noreply@herald-demo.example>",
        "replyTo": "",
        "connectTimeout": "10s",
        "timeout": "60s",
        "connections": 1,
    },
    "database": {"path": "var/herald.sqlite"},
    "worker": {
        "batchSize": 50,
        "maxAttempts": 8,
        "backoffBase": "30s",
        "backoffCap": "1h",
        "lease": "30m",
        "pollInterval": "1s",
        "maxQueueWait": {"signIn": "15m", "resetPassword": "15m"},
    },
    "accounts": {"owner": "app"},
}

ACTION_URL = DEFAULT_CONFIG["links"]["actionUrl"]
API_KEY = DEFAULT_CONFIG["project"]["apiKey"]
FROM_ADDRESS = "noreply@herald-demo.example"
MODES = {
    "sign-in": "signIn",
    "verify-email": "verifyEmail",
    "reset-password": "resetPassword",
    "verify-and-change-email": "verifyAndChangeEmail",
}
OOB_CODE_RE = re.compile(r"^[A-Za-z0-9_-]{43,}$")
DB_NAME = "herald.sqlite"


def deep_merge(base: dict, overrides: dict) -> dict:
    """Return a copy of `base` with `overrides` merged in recursively (dicts
    merge, everything else - lists included - replaces)."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def db_path(tmp_path: Path) -> Path:
    return Path(tmp_path) / DB_NAME


def write_config(tmp_path: Path, capture: Optional[CaptureServer] = None, /, *,
                 name: str = "herald.yaml", **overrides: Any) -> Path:
    """Write tmp_path/<name> from DEFAULT_CONFIG with database.path in tmp_path,
    smtp.url pointing at the `capture` server (if given), then `overrides` deep-merged, e.g.
    ``write_config(tmp_path, capture, worker={"maxAttempts": 1})`` (``server={...}`` is the config's section)."""
    tmp_path = Path(tmp_path)
    config = deep_merge(DEFAULT_CONFIG, {"database": {"path": str(db_path(tmp_path))},
                                         "templates": {"directory": str(REPO_ROOT / "templates")}})
    if capture is not None:
        config["smtp"]["url"] = f"smtp://127.0.0.1:{capture.port}"
    config = deep_merge(config, overrides)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- polling
def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


# --------------------------------------------------------------------------- running herald
def herald_env(extra: Optional[dict] = None) -> dict:
    """The environment for herald: ours minus any HERALD_* leaking in, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env.update(extra or {})
    return env


def error_lines(stderr: str) -> list:
    return [line for line in stderr.splitlines() if line.strip()]


def assert_one_error_line(result: subprocess.CompletedProcess, *needles: str) -> str:
    """The contract for rejected input: non-zero exit, exactly one stderr line,
    starting with 'error: ' and containing every needle."""
    assert result.returncode != 0, f"expected failure, got exit 0; stdout={result.stdout!r}"
    lines = error_lines(result.stderr)
    assert len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{result.stderr}"
    line = lines[0]
    assert line.startswith("error: "), f"stderr line must start with 'error: ': {line!r}"
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


# --------------------------------------------------------------------------- database
def query(db: Path, sql: str, params: tuple = ()) -> list:
    """Run a read-only query against a snapshot copy of the database (so the
    test never takes a lock on, or checkpoints, the file under test). Returns
    a list of dicts; an absent database yields []."""
    db = Path(db)
    if not db.exists():
        return []
    with tempfile.TemporaryDirectory() as snap:
        copy_path = Path(snap) / db.name
        shutil.copyfile(db, copy_path)
        wal = db.with_name(db.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, copy_path.with_name(copy_path.name + "-wal"))
        with closing(sqlite3.connect(copy_path)) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(row) for row in conn.execute(sql, params)]


def table_exists(db: Path, table: str) -> bool:
    return bool(query(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)))


def row_count(db: Path, table: str) -> int:
    """Rows in `table`; 0 when the database or the table does not exist."""
    if not table_exists(db, table):
        return 0
    return query(db, f"SELECT count(*) AS n FROM {table}")[0]["n"]


def delivery_attempts(db: Path, outbox_id: int) -> list:
    return query(
        db,
        "SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY attempt",
        (outbox_id,),
    )


def ledger_key(code: str) -> bytes:
    """What the ledger keeps for an action code in `code_hash` (`ActionCode.ledgerKey`): for a keyed code (54
    characters), its first 8 bytes (an increasing key, not secret) then the SHA-256 of the code; else the SHA-256."""
    digest = hashlib.sha256(code.encode("utf-8")).digest()
    if len(code) != 54:
        return digest
    try:
        raw = base64.urlsafe_b64decode(code + "==")
    except ValueError:
        return digest
    return raw[:8] + digest


def database_files(db: Path) -> list:
    """The database file and any companion files SQLite may keep next to it."""
    db = Path(db)
    return [p for p in (db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))) if p.exists()]


# --------------------------------------------------------------------------- messages
class _LinkCollector(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            for name, value in attrs:
                if name == "href" and value:
                    self.hrefs.append(value)  # attribute values arrive unescaped


_URL_RE = re.compile(r"https?://[^\s<>\"')\]]+")


def text_part(message) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None, "no text/plain part"
    return part.get_content()


def html_part(message) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None, "no text/html part"
    return part.get_content()


def _is_action_link(url: str) -> bool:
    query_ = parse_qs(urlsplit(url).query)
    return "oobCode" in query_ or "link" in query_


def text_links(message) -> list:
    return [u for u in _URL_RE.findall(text_part(message)) if _is_action_link(u)]


def html_links(message) -> list:
    collector = _LinkCollector()
    collector.feed(html_part(message))
    return [u for u in collector.hrefs if _is_action_link(u)]


def action_link(message) -> str:
    """The one action link of a message, checked to be the same in both parts."""
    texts, htmls = text_links(message), html_links(message)
    assert texts, "no action link in the text/plain part"
    assert htmls, "no action link (<a href>) in the text/html part"
    assert set(texts) == set(htmls), f"text and html links differ:\n{texts}\n{htmls}"
    assert len(set(texts)) == 1, f"more than one distinct action link: {texts}"
    return texts[0]


def parse_link(url: str) -> dict:
    """Split an action link into {'base', 'params', 'wrapper'}; a
    https://D/__/auth/links?link=... wrapper is unwrapped, with wrapper =
    {'host': D, 'params': ...}. Every query parameter must occur once."""
    parts = urlsplit(url)
    params = parse_qs(parts.query, keep_blank_values=True, strict_parsing=True)
    duplicated = [k for k, v in params.items() if len(v) != 1]
    assert not duplicated, f"repeated query parameters {duplicated} in {url}"
    flat = {k: v[0] for k, v in params.items()}
    if parts.path == "/__/auth/links" and "link" in flat:
        inner = parse_link(flat["link"])
        inner["wrapper"] = {"scheme": parts.scheme, "host": parts.netloc, "params": flat}
        return inner
    return {
        "base": f"{parts.scheme}://{parts.netloc}{parts.path}",
        "params": flat,
        "wrapper": None,
    }


def raw_header(raw: bytes, name: str) -> bytes:
    """The raw (still folded, still encoded) value of header `name`."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    lines = head.split(b"\r\n")
    prefix = name.lower().encode("ascii") + b":"
    for i, line in enumerate(lines):
        if line.lower().startswith(prefix):
            value = [line[len(prefix):]]
            for cont in lines[i + 1:]:
                if cont[:1] in (b" ", b"\t"):
                    value.append(cont)
                else:
                    break
            return b"\r\n".join(value)
    raise AssertionError(f"no {name} header")


def by_recipient(messages: list) -> dict:
    """{recipient: [captured message, ...]} over the envelope recipients."""
    out: dict = {}
    for m in messages:
        for rcpt in m["rcpt_tos"]:
            out.setdefault(rcpt.lower(), []).append(m)
    return out


# --------------------------------------------------------------------------- outages
def attempt_rows(db: Path, outbox_id: Optional[int] = None) -> list:
    """delivery_attempts rows in the order they were written (by id), for one
    outbox row or for all. Unlike delivery_attempts() this does not order by
    the attempt number, which 'connection' rows (no attempt charged) do not
    advance."""
    if outbox_id is None:
        return query(db, "SELECT * FROM delivery_attempts ORDER BY id")
    return query(db, "SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", (outbox_id,))


def connection_attempts(db: Path) -> list:
    """Every delivery_attempts row with outcome 'connection' (the server or the
    connection failed, not the message), oldest first."""
    return query(db, "SELECT * FROM delivery_attempts WHERE outcome = 'connection' ORDER BY id")


def connection_failures(db: Path) -> int:
    """How many connection-level failures the ledger shows: distinct start times
    of 'connection' attempt rows, so a failure recorded against several claimed
    rows at once still counts once."""
    return len({row["started_at"] for row in connection_attempts(db)})


def write_recipients(tmp_path: Path, addresses: list, name: str = "recipients.txt") -> Path:
    """A `herald send --recipients` file: one address per line."""
    path = Path(tmp_path) / name
    path.write_text("".join(f"{a}\n" for a in addresses), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- storage faults
# Real faults in the real ledger file, for Tests/*/test_storage_faults.py. Mounting and chattr
# need root (CI runs as root); where the platform refuses, the test is skipped with the reason.
class WriteLock:
    """Holds SQLite's write lock on `db` from this process (`BEGIN IMMEDIATE` on a
    connection of our own), as another writer that never lets go would:

        with WriteLock(db):
            ...  # every other connection's write waits, then gets SQLITE_BUSY

    Nothing is written; leaving the block rolls back and closes the connection."""

    def __init__(self, db: Path, timeout: float = 20) -> None:
        self.db, self.timeout = Path(db), timeout
        self.conn: Optional[sqlite3.Connection] = None
        self.acquired_at: Optional[float] = None

    def __enter__(self) -> "WriteLock":
        self.conn = sqlite3.connect(self.db, isolation_level=None, timeout=self.timeout)
        self.conn.execute("BEGIN IMMEDIATE")
        self.acquired_at = time.monotonic()
        return self

    def held_for(self) -> float:
        return time.monotonic() - (self.acquired_at or time.monotonic())

    def __exit__(self, *exc: Any) -> None:
        if self.conn is not None:
            try:
                self.conn.execute("ROLLBACK")
            finally:
                self.conn.close()
                self.conn = None


def _run_quiet(argv: list) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def mount_tmpfs(directory: Path, size: str = "8m") -> Path:
    """Mounts a fresh tmpfs of `size` on `directory` (created); skips the test when
    mounting is not allowed here. Pair with unmount() in a finally."""
    import pytest

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        result = _run_quiet(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(directory)])
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here (needs root and mount(8)): {exc}")
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs on {directory} here (needs root / CAP_SYS_ADMIN): "
                    f"{(result.stderr or result.stdout).strip()}")
    return directory


def unmount(directory: Path) -> None:
    """Unmounts `directory`, lazily if something still holds it, so no mount outlives the test."""
    for _ in range(50):
        result = _run_quiet(["umount", str(directory)])
        if result.returncode == 0 or "not mounted" in result.stderr:
            return
        time.sleep(0.1)
    _run_quiet(["umount", "-l", str(directory)])


def fill_filesystem(directory: Path, name: str = "filler.bin") -> Path:
    """Writes directory/name until the filesystem answers ENOSPC; returns the file.
    Deleting it frees the space again."""
    import errno

    path = Path(directory) / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (b"\0" * (1 << 20), b"\0" * 4096, b"\0"):
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        try:
            os.fsync(fd)
        except OSError:
            pass
    finally:
        os.close(fd)
    return path


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def _chattr(flag: str, path: Path) -> subprocess.CompletedProcess:
    return _run_quiet(["chattr", flag, str(path)])


def immutable_blocks_open_writes(directory: Path) -> Optional[str]:
    """None when `chattr +i` on this filesystem also refuses writes through a file
    descriptor opened before the flag was set (ext4 does; tmpfs does not); else why not."""
    probe = Path(directory) / ".immutable-probe"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"x" * 4096)
        try:
            result = _chattr("+i", probe)
        except OSError as exc:
            return f"chattr is not available: {exc}"
        if result.returncode != 0:
            return f"chattr +i failed here: {(result.stderr or result.stdout).strip()}"
        try:
            os.pwrite(fd, b"y", 0)
        except PermissionError:
            return None
        return "this filesystem accepts writes through open descriptors of an immutable file"
    finally:
        _chattr("-i", probe)
        os.close(fd)
        probe.unlink(missing_ok=True)


class Immutable:
    """`chattr +i` on `paths` for the block, `chattr -i` after (always):

        with Immutable([db, wal, db.parent]):
            ...  # writes through open descriptors fail with EPERM, new opens are read-only"""

    def __init__(self, paths: list) -> None:
        self.paths = [Path(p) for p in paths]
        self._set: list = []

    def __enter__(self) -> "Immutable":
        try:
            for path in self.paths:
                result = _chattr("+i", path)
                if result.returncode != 0:
                    raise AssertionError(f"chattr +i {path}: {(result.stderr or result.stdout).strip()}")
                self._set.append(path)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for path in reversed(self._set):
            _chattr("-i", path)
        self._set = []


def integrity_check(db: Path) -> list:
    """PRAGMA integrity_check over a snapshot of the ledger: ['ok'] when sound."""
    return [next(iter(row.values())) for row in query(db, "PRAGMA integrity_check")]


def wal_size(db: Path) -> int:
    wal = Path(db).with_name(Path(db).name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def kill_when_received(proc: subprocess.Popen, server: CaptureServer, count: int, timeout: float) -> int:
    """SIGKILL `proc` the moment `server` has accepted `count` messages (tight poll);
    returns received_count at that moment. Fails if `proc` exits first or on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        received = server.received_count
        if received >= count:
            proc.kill()
            proc.wait(timeout=10)
            return received
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited ({proc.returncode}) before {count} messages were received "
                                 f"(got {received})")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {count} received messages "
                                 f"(got {received})")
        time.sleep(0.002)


def duplicates_by_crash(seen: dict, boundaries: list) -> tuple:
    """Attribute each repeated delivery to the crash between its two receptions.

    `seen` maps a recipient to the indexes (in arrival order) of its receptions; `boundaries`
    holds the reception count at each crash. Returns (duplicates per crash, recipients sent
    twice with no crash in between)."""
    per_crash = [0] * len(boundaries)
    unexplained = []
    for rcpt, indexes in seen.items():
        for first, again in zip(indexes, indexes[1:]):
            crash = next((i for i, b in enumerate(boundaries) if first < b <= again), None)
            if crash is None:
                unexplained.append(rcpt)
            else:
                per_crash[crash] += 1
    return per_crash, unexplained


# --------------------------------------------------------------------------- logs
ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def json_log_records(stderr: str, process: str) -> list:
    """The lines of a `log.format: json` log, each checked to be one object with the stable keys in order
    (time, level, label, message, metadata), an ISO UTC time and a known level."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, f"{process} logged nothing"
    records = [json.loads(line) for line in lines]
    for record in records:
        assert list(record) == ["time", "level", "label", "message", "metadata"], record
        assert ISO_UTC.match(record["time"]), record["time"]
        assert record["level"] in {"trace", "debug", "info", "notice", "warning", "error", "critical"}
        assert isinstance(record["metadata"], dict)
    return records


def remount_tmpfs(directory: Path, size: str) -> None:
    """Grows (or shrinks) the tmpfs mounted on `directory` (by mount_tmpfs) to `size`, keeping its files."""
    result = _run_quiet(["mount", "-o", f"remount,size={size}", str(directory)])
    assert result.returncode == 0, f"cannot remount {directory} with size={size}: {(result.stderr or result.stdout).strip()}"

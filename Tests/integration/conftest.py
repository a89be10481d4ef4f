"""Fixtures for the Herald integration suite.

Every test gets its own tmp_path (the working directory of every herald
process), its own SQLite file (tmp_path/herald.sqlite, via write_config) and
its own CaptureServer on a free port. The binary under test is $HERALD_BIN
(relative paths are taken from the repository root), default
<repo>/.build/debug/herald; when it is missing every test fails - nothing is
skipped.

Conventions of the harness (see also helpers.py):
* `--config PATH` is appended after the subcommand and its arguments, which
  swift-argument-parser accepts whether the option is declared on the root
  command or on each subcommand (the form before the subcommand only works in
  the former case).
* HERALD_* variables of the calling environment are never passed on; tests
  that exercise env overrides pass them explicitly with env={...}.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Optional

import pytest

from helpers import REPO_ROOT, CaptureServer, db_path, herald_env, make_cert

DEFAULT_TIMEOUT = 60


# --------------------------------------------------------------------------- the binary
def _resolve_herald_bin() -> Path:
    value = os.environ.get("HERALD_BIN")
    path = Path(value) if value else Path(".build/debug/herald")
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


@pytest.fixture(scope="session")
def herald_bin() -> Path:
    path = _resolve_herald_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"herald binary not found or not executable at {path}. Build it first "
            "(`swift build` in the repository root) or point $HERALD_BIN at it.",
            pytrace=False,
        )
    return path


# --------------------------------------------------------------------------- running herald
class Background:
    """A herald process running in the background, output going to files."""

    def __init__(self, argv: list, proc: subprocess.Popen, out: Path, err: Path) -> None:
        self.argv, self.proc, self._out, self._err = argv, proc, out, err

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stdout(self) -> str:
        return self._out.read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        return self._err.read_text(encoding="utf-8", errors="replace")

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            pytest.fail(
                f"{shlex.join(self.argv)} did not exit within {timeout}s\n"
                f"stdout:\n{self.stdout()}\nstderr:\n{self.stderr()}"
            )

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Herald:
    """Callable runner: herald(*args, config=..., check=True, timeout=...)."""

    def __init__(self, binary: Path, cwd: Path) -> None:
        self.binary = binary
        self.cwd = cwd
        self._background: list = []

    def argv(self, args: tuple, config: Optional[Path]) -> list:
        argv = [str(self.binary), *(str(a) for a in args)]
        if config is not None:
            argv += ["--config", str(config)]
        return argv

    def __call__(self, *args, config: Optional[Path] = None, check: bool = True,
                 timeout: float = DEFAULT_TIMEOUT, env: Optional[dict] = None) -> subprocess.CompletedProcess:
        argv = self.argv(args, config)
        try:
            proc = subprocess.run(
                argv, cwd=self.cwd, env=herald_env(env), stdin=subprocess.DEVNULL,
                capture_output=True, timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(
                f"{shlex.join(argv)} timed out after {timeout}s\n"
                f"stdout:\n{(exc.stdout or b'').decode('utf-8', 'replace')}\n"
                f"stderr:\n{(exc.stderr or b'').decode('utf-8', 'replace')}"
            )
        result = subprocess.CompletedProcess(
            argv, proc.returncode,
            proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
        )
        result.stdout_bytes = proc.stdout
        # Shown by pytest when the test fails.
        print(f"$ {shlex.join(argv)}\n[exit {result.returncode}]\n"
              f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}---")
        if check and result.returncode != 0:
            pytest.fail(
                f"{shlex.join(argv)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    def start(self, *args, config: Optional[Path] = None, env: Optional[dict] = None,
              name: str = "herald") -> Background:
        argv = self.argv(args, config)
        n = len(self._background) + 1
        out, err = self.cwd / f"{name}-{n}.stdout", self.cwd / f"{name}-{n}.stderr"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.Popen(argv, cwd=self.cwd, env=herald_env(env),
                                    stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        bg = Background(argv, proc, out, err)
        self._background.append(bg)
        return bg

    # Conveniences over the CLI contract ---------------------------------------
    def send(self, action: str, email: str, *options, config: Path, env: Optional[dict] = None) -> int:
        """`herald send ...`; returns the outbox id printed on stdout."""
        result = self("send", action, email, *options, config=config, env=env)
        ids = [line.strip() for line in result.stdout.splitlines() if re.fullmatch(r"\s*\d+\s*", line)]
        assert len(ids) == 1, f"send must print the outbox id alone on a line, got {result.stdout!r}"
        return int(ids[0])

    def worker_until_empty(self, config: Path, timeout: float = 90, **kwargs) -> subprocess.CompletedProcess:
        return self("worker", "--until-empty", config=config, timeout=timeout, **kwargs)

    def messages(self, config: Path, state: Optional[str] = None, email: Optional[str] = None) -> list:
        args = ["messages", "--json"]
        if state:
            args += ["--state", state]
        if email:
            args += ["--email", email]
        result = self(*args, config=config)
        data = json.loads(result.stdout)
        assert isinstance(data, list), f"messages --json must print an array, got {type(data)}"
        return data

    def message(self, config: Path, outbox_id: int) -> dict:
        rows = [m for m in self.messages(config) if m["id"] == outbox_id]
        assert len(rows) == 1, f"outbox id {outbox_id} not listed by messages --json"
        return rows[0]

    def cleanup(self) -> None:
        for bg in self._background:
            bg.kill()


@pytest.fixture
def herald(herald_bin: Path, tmp_path: Path):
    runner = Herald(herald_bin, tmp_path)
    yield runner
    runner.cleanup()


# --------------------------------------------------------------------------- SMTP capture
@pytest.fixture
def start_capture():
    """Factory: start_capture(**CaptureServer options) -> started server,
    stopped at teardown."""
    servers: list = []

    def start(**options) -> CaptureServer:
        server = CaptureServer(**options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def capture(start_capture) -> CaptureServer:
    """A plain capture server: accepts everything, no TLS, no AUTH."""
    return start_capture()


@pytest.fixture
def tls_cert(tmp_path: Path) -> tuple:
    """(cert.pem, key.pem) for CN=localhost / IP:127.0.0.1, generated per test."""
    return make_cert(tmp_path / "certs")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The SQLite file write_config() points herald at."""
    return db_path(tmp_path)

"""Fixtures for the Firebase Auth Emulator compatibility suite.

The fixtures of Tests/integration/conftest.py (`herald_bin`) and Tests/http/conftest.py
(`server`, function-scoped) are loaded from their files under their own module names and
re-exported, as Tests/campaigns/conftest.py does. On top of them:

* `emu` (module-scoped): one `herald serve` per test module with the emulator's defaults
  (compat_support.COMPAT_OVERRIDES over the http suite's BASE_OVERRIDES: Herald owns the
  accounts, no enumeration protection, emulator mode, `Bearer owner` allowed, no cooldown).
  Tests share it and use addresses of their own.
* `emu_protected` (module-scoped): the same with `server.enumerationProtection: true`, the
  counterpart of the emulator's `emailPrivacyConfig.enableImprovedEmailPrivacy: true`.
* `compat_server(**overrides)` (function-scoped factory): a server of its own with
  COMPAT_OVERRIDES plus `overrides`, for the few cases that need another configuration.

A module server that died, or does not exit 0 on SIGTERM at the end of the module, fails the
module's last test's teardown with the server's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", _TESTS / "http", Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))


from suites import sibling_conftest  # noqa: E402

_integration = sibling_conftest("integration")
_http = sibling_conftest("http")

herald_bin = _integration.herald_bin
server = _http.server

from helpers import CaptureServer, deep_merge  # noqa: E402
from http_support import BASE_OVERRIDES, HeraldServer, write_serve_config  # noqa: E402
from compat_support import COMPAT_OVERRIDES  # noqa: E402


def _start(herald_bin: Path, cwd: Path, overrides: dict) -> HeraldServer:
    capture = CaptureServer()
    capture.start()
    settings = deep_merge(deep_merge(BASE_OVERRIDES, COMPAT_OVERRIDES), overrides)
    config = write_serve_config(cwd, capture, settings)
    srv = HeraldServer(herald_bin, config, cwd, capture, (), settings)
    try:
        return srv.wait_ready()
    except BaseException:
        capture.stop()
        raise


def _stop(srv: HeraldServer) -> str:
    """Stop one server; '' when it ended well, else what went wrong."""
    try:
        if srv.returncode is not None:
            return ""
        if not srv.running:
            srv.kill()
            return f"herald serve died during the tests (exit {srv.proc.returncode})\n{srv.describe()}"
        code = srv.stop()
        return "" if code == 0 else f"herald serve exited {code} on SIGTERM (expected 0)\n{srv.describe()}"
    finally:
        srv.capture.stop()


def _finish(*servers: HeraldServer) -> None:
    failures = [f for f in (_stop(srv) for srv in servers) if f]
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.fixture(scope="module")
def emu(herald_bin: Path, tmp_path_factory):
    """One emulator-like server for the whole module."""
    srv = _start(herald_bin, tmp_path_factory.mktemp("emu"), {})
    yield srv
    _finish(srv)


@pytest.fixture(scope="module")
def emu_protected(herald_bin: Path, tmp_path_factory):
    """The same with enumeration protection on ("improved email privacy" in the emulator)."""
    srv = _start(herald_bin, tmp_path_factory.mktemp("emu-protected"),
                 {"server": {"enumerationProtection": True}})
    yield srv
    _finish(srv)


@pytest.fixture
def compat_server(herald_bin: Path, tmp_path: Path):
    """Factory: compat_server(**overrides) -> a server of its own (COMPAT_OVERRIDES + overrides)."""
    started: list = []

    def start(**overrides) -> HeraldServer:
        cwd = tmp_path / f"server-{len(started) + 1}"
        cwd.mkdir(parents=True, exist_ok=True)
        srv = _start(herald_bin, cwd, overrides)
        started.append(srv)
        return srv

    yield start
    _finish(*started)

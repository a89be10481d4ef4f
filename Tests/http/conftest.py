"""Fixtures for the `herald serve` suite (HTTP API, action pages, firebase-admin).

The binary is $HERALD_BIN (relative paths from the repository root), default
<repo>/.build/debug/herald. A missing binary, or one without `serve`, fails
every test with the server's output; nothing is skipped.

`server(*cli_args, **config_overrides)` writes a config (write_serve_config:
write_config from Tests/integration/helpers.py plus the `server:` section,
whose name write_config's own `server` parameter shadows; overrides are
deep-merged over BASE_OVERRIDES: port 0, a known
admin token, a 100 ms worker poll), starts its own capture SMTP server, runs
`herald serve [cli_args] --config C` in a fresh directory, waits for the stdout
line `READY http://127.0.0.1:<port>` and returns a HeraldServer
(http_support.py). At teardown each server gets SIGTERM and must exit 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import uuid

import firebase_admin  # a missing package fails collection loudly: see Tests/requirements.txt
import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from helpers import CaptureServer, deep_merge  # noqa: E402
from http_support import BASE_OVERRIDES, PROJECT, HeraldServer, write_serve_config  # noqa: E402
from suites import sibling_conftest  # noqa: E402


herald_bin = sibling_conftest("integration").herald_bin


@pytest.fixture
def server(herald_bin: Path, tmp_path: Path):
    """Factory: server(*cli_args, **config_overrides) -> a ready HeraldServer."""
    started: list = []
    captures: list = []

    def start(*cli_args: str, **overrides) -> HeraldServer:
        n = len(started) + 1
        cwd = tmp_path if n == 1 else tmp_path / f"server-{n}"
        cwd.mkdir(parents=True, exist_ok=True)
        capture = CaptureServer()
        capture.start()
        captures.append(capture)
        settings = deep_merge(BASE_OVERRIDES, overrides)
        config = write_serve_config(cwd, capture, settings)
        srv = HeraldServer(herald_bin, config, cwd, capture, cli_args, settings)
        started.append(srv)
        return srv.wait_ready()

    yield start

    failures = []
    for srv in started:
        if srv.returncode is not None:  # the test stopped it itself
            continue
        if not srv.running:
            failures.append(f"herald serve died during the test (exit {srv.proc.returncode})\n{srv.describe()}")
            srv.kill()
            continue
        code = srv.stop()
        if code != 0:
            failures.append(f"herald serve exited {code} on SIGTERM (expected 0)\n{srv.describe()}")
    for capture in captures:
        capture.stop()
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


# --------------------------------------------------------------------------- identity-provider peers (#11)
from idp_peers import OAuth1Provider, OIDCIssuer  # noqa: E402


@pytest.fixture
def oidc_issuer():
    """A started OIDCIssuer (idp_peers.py) on 127.0.0.1:<free port>, stopped after the test."""
    with OIDCIssuer() as issuer:
        yield issuer


@pytest.fixture
def oidc_issuer_factory():
    """Factory for more issuers (e.g. a second provider): oidc_issuer_factory(client_id=...) -> started OIDCIssuer."""
    issuers: list = []

    def make(**kwargs) -> OIDCIssuer:
        issuer = OIDCIssuer(**kwargs).start()
        issuers.append(issuer)
        return issuer

    yield make
    for issuer in issuers:
        issuer.stop()


@pytest.fixture
def oauth1_provider():
    """A started OAuth1Provider (Twitter's verify_credentials, idp_peers.py), stopped after the test."""
    with OAuth1Provider() as provider:
        yield provider


@pytest.fixture
def admin_app(monkeypatch):
    """Factory: admin_app(srv) -> a firebase_admin.App talking to `srv` (the firebase-admin suites)."""
    apps: list = []

    def make(srv):
        # Read by the SDK when the app's auth client is first created.
        monkeypatch.setenv("FIREBASE_AUTH_EMULATOR_HOST", f"127.0.0.1:{srv.port}")
        app = firebase_admin.initialize_app(options={"projectId": PROJECT, "httpTimeout": 10},
                                            name=f"herald-{uuid.uuid4().hex}")
        apps.append(app)
        return app

    yield make
    for app in apps:
        firebase_admin.delete_app(app)

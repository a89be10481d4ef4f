"""Fixtures for the `/admin` browser console suite (HTTP with requests, and Selenium driving headless Chromium).

Nothing of the harness is copied: the server process is Tests/http's HeraldServer (http_support.py) with
its BASE_OVERRIDES (loopback, port 0, the known ADMIN_TOKEN as `server.adminToken`), the capture SMTP server
and config writer are Tests/integration's, the CLI runner (`Herald`) and `herald_bin` come from
Tests/integration/conftest.py, campaigns are created as Tests/campaigns does (campaign_support.py).

Unlike Tests/http's function-scoped `server`, `console_server` is module-scoped: one `herald serve` (with its
embedded worker) per test module, stopped with SIGTERM at the end of the module (exit 0 required). Tests use
addresses of their own (unique_email) and read expectations from the ledger, so their order does not matter.

Helpers (the ledger, the HTML parser, the requests client, screenshot checks) are in console_support.py.
The browser is Selenium 4 with /usr/bin/chromium and /usr/bin/chromedriver (no Selenium Manager: no network).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", _TESTS / "http", _TESTS / "campaigns",
             Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from helpers import CaptureServer, deep_merge  # noqa: E402
from http_support import BASE_OVERRIDES, HeraldServer, write_serve_config  # noqa: E402
from campaign_support import CAMPAIGNS  # noqa: E402
from suites import chromium_driver, sibling_conftest  # noqa: E402
from console_support import REFUSED_DOMAIN, ConsoleClient, Ledger  # noqa: E402

_integration = sibling_conftest("integration")
herald_bin = _integration.herald_bin  # session-scoped: $HERALD_BIN or .build/debug/herald, fails when missing

# No mail cooldown between sends to one address (two resets to the same person); `campaigns:` for the CLI.
CONSOLE_OVERRIDES = {"campaigns": CAMPAIGNS, "policy": {"cooldown": "0s"}}


# =========================================================================== the server
@pytest.fixture(scope="module")
def console_server(herald_bin: Path, tmp_path_factory):
    """One `herald serve` (embedded worker, 100 ms poll) for the module, with its own capture SMTP server
    that refuses RCPT TO of @refused.test with 550."""
    cwd = tmp_path_factory.mktemp("console")
    capture = CaptureServer(script=[f"rcpt=@{REFUSED_DOMAIN}:550:5.1.1 No such user here"])
    capture.start()
    settings = deep_merge(BASE_OVERRIDES, CONSOLE_OVERRIDES)
    srv = HeraldServer(herald_bin, write_serve_config(cwd, capture, settings), cwd, capture, (), settings)
    try:
        srv.wait_ready()
        yield srv
    finally:
        failure = None
        if srv.returncode is None:
            if not srv.running:
                failure = f"herald serve died during the module (exit {srv.proc.returncode})\n{srv.describe()}"
                srv.kill()
            else:
                code = srv.stop()
                if code != 0:
                    failure = f"herald serve exited {code} on SIGTERM (expected 0)\n{srv.describe()}"
        capture.stop()
        if failure:
            pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="module")
def console_cli(herald_bin: Path, console_server):
    """The integration suite's CLI runner, in the server's directory: cli(*args, config=srv.config)."""
    runner = _integration.Herald(herald_bin, console_server.cwd)
    yield runner
    runner.cleanup()


@pytest.fixture(scope="module")
def ledger(console_server, console_cli) -> Ledger:
    return Ledger(console_server, console_cli)


@pytest.fixture(scope="module")
def client(console_server) -> ConsoleClient:
    return ConsoleClient(console_server)


@pytest.fixture(scope="module")
def session(client) -> SimpleNamespace:
    """A signed-in session (requests side) shared by the module."""
    return client.sign_in()


# =========================================================================== browser
@pytest.fixture(scope="module")
def driver():
    """Headless Chromium through chromedriver (both from Debian), 1280x900."""
    browser = chromium_driver("--window-size=1280,900", "--hide-scrollbars", "--force-device-scale-factor=1")
    yield browser
    browser.quit()



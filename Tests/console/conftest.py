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

from suites import chromium_driver, sibling_conftest  # noqa: E402
from console_support import ConsoleClient, Ledger, serve_console  # noqa: E402

_integration = sibling_conftest("integration")
herald_bin = _integration.herald_bin  # session-scoped: $HERALD_BIN or .build/debug/herald, fails when missing


# =========================================================================== the server
@pytest.fixture(scope="module")
def console_server(herald_bin: Path, tmp_path_factory):
    """The module's `herald serve` (a module may override this fixture with other settings: `serve_console`)."""
    yield from serve_console(herald_bin, tmp_path_factory)


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



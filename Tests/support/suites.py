"""Shared by the end-to-end suites: loading a sibling suite's fixtures, and finding headless Chromium.

Each suite's conftest.py puts Tests/support on sys.path before importing this module.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's `chromium` package (scripts/install-deps.sh)


def sibling_conftest(suite: str):
    """Tests/<suite>/conftest.py, imported once under a name of its own, so its fixtures live in one place."""
    name = f"herald_{suite}_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TESTS / suite / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def chromium_binary() -> str:
    """The headless Chromium the browser tests drive; a missing one fails the test with how to install it."""
    path = shutil.which("chromium") or CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"headless Chromium not found ({CHROMIUM}): install Debian's `chromium` package "
                    "(scripts/install-deps.sh does).", pytrace=False)
    return path


CHROMEDRIVER = "/usr/bin/chromedriver"


def chromium_driver(*extra_args: str):
    """Headless Chromium through Debian's chromedriver (Selenium), with `extra_args`; a missing one fails the test
    with how to install it. The caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *extra_args):
        options.add_argument(arg)
    options.binary_location = chromium_binary()
    try:
        browser = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    except Exception as exc:  # noqa: BLE001 - name what is missing
        pytest.fail(f"could not start headless Chromium via {CHROMEDRIVER}: {exc}\n"
                    "(scripts/install-deps.sh installs chromium and chromium-driver)", pytrace=False)
    browser.set_page_load_timeout(30)
    return browser

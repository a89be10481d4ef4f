"""Fixtures for the campaign and audit suite (`herald campaign …`, `herald audit`,
`/admin/campaigns/{id}`, `/admin/audit`).

Nothing here is new: the fixtures are those of Tests/integration/conftest.py
(`herald`, `capture`, `start_capture`, `db`, `herald_bin`) and of
Tests/http/conftest.py (`server`), loaded from their files under their own
module names and re-exported, so this directory sees both sets. Both use
tmp_path as working directory: `server()` writes tmp_path/herald.yaml, so the
CLI runner `herald(..., config=srv.config)` works on the very ledger the
server serves.

The binary is $HERALD_BIN (default <repo>/.build/debug/herald). A missing
binary, or one without a command the contract names, fails the test with the
command and its output; nothing is skipped.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", _TESTS / "http", Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))


def _load(name: str, path: Path):
    """Import a sibling suite's conftest.py under a name of its own."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_integration = _load("herald_integration_conftest", _TESTS / "integration" / "conftest.py")
_http = _load("herald_http_conftest", _TESTS / "http" / "conftest.py")

herald_bin = _integration.herald_bin
herald = _integration.herald
start_capture = _integration.start_capture
capture = _integration.capture
db = _integration.db
server = _http.server

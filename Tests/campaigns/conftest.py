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

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", _TESTS / "http", Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))


from suites import sibling_conftest  # noqa: E402

_integration = sibling_conftest("integration")
_http = sibling_conftest("http")

herald_bin = _integration.herald_bin
herald = _integration.herald
start_capture = _integration.start_capture
capture = _integration.capture
db = _integration.db
server = _http.server

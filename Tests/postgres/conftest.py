"""Fixtures for the PostgreSQL suite: several herald processes on one PostgreSQL ledger.

The herald fixtures are those of Tests/integration/conftest.py (`herald`, `capture`, `start_capture`, `db`,
`herald_bin`) and of Tests/http/conftest.py (`server`), loaded from their files under their own module names
and re-exported, as Tests/campaigns does; nothing about running herald is repeated here.

New here is `postgres`: the server `HERALD_TEST_POSTGRES` names (postgres://user@host:port/db, no password;
`scripts/with-postgres.sh` starts a throwaway cluster and exports it, and `make test` runs the suites under
it) with a schema of the test's own, so no two tests share a ledger. Without HERALD_TEST_POSTGRES the tests
that need a server are skipped, saying so. The schema is dropped after the test.

The binary is $HERALD_BIN (default <repo>/.build/debug/herald); a missing one fails the test, as elsewhere.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _dir in (_TESTS / "integration", _TESTS / "support", _TESTS / "http", Path(__file__).resolve().parent):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from suites import sibling_conftest  # noqa: E402
from pg_support import PostgresLedger  # noqa: E402

_integration = sibling_conftest("integration")
_http = sibling_conftest("http")

herald_bin = _integration.herald_bin
herald = _integration.herald
start_capture = _integration.start_capture
capture = _integration.capture
db = _integration.db
server = _http.server

ENV = "HERALD_TEST_POSTGRES"


@pytest.fixture
def postgres():
    """A PostgresLedger (pg_support.py) on a fresh schema of $HERALD_TEST_POSTGRES; skips without it.

    Request it before `server` and `herald` so that it is torn down after them: the schema is dropped
    once every herald process of the test has stopped."""
    base = os.environ.get(ENV, "").strip()
    if not base:
        pytest.skip(f"{ENV} is not set: run under scripts/with-postgres.sh (make test does), "
                    f"or point it at a PostgreSQL server as postgres://user@host:port/db")
    ledger = PostgresLedger(base, f"t_{uuid.uuid4().hex[:16]}")
    yield ledger
    ledger.drop()

"""Plain helpers for the PostgreSQL suite (fixtures live in conftest.py).

The ledger is read with `psql` (PostgreSQL's client, installed with the server by scripts/install-deps.sh),
so the suite needs no Python driver: each query is wrapped in json_agg and parsed here.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess

import pytest


def psql_binary() -> str:
    found = shutil.which("psql") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"), reverse=True)), None)
    if not found:
        pytest.fail("psql not found: install PostgreSQL's client (scripts/install-deps.sh installs postgresql-15)",
                    pytrace=False)
    return found


class PostgresLedger:
    """One test's ledger: `url` (the server's URL plus `?schema=<schema>`) for herald's `database.url`,
    and read-only queries against that schema."""

    def __init__(self, base_url: str, schema: str) -> None:
        self.base_url, self.schema = base_url, schema
        self.url = f"{base_url}?schema={schema}"

    def _psql(self, *commands: str, timeout: float = 60) -> str:
        argv = [psql_binary(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.base_url]
        for command in commands:
            argv += ["-c", command]
        env = dict(os.environ)
        if os.environ.get("HERALD_DATABASE_PASSWORD"):
            env["PGPASSWORD"] = os.environ["HERALD_DATABASE_PASSWORD"]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        if result.returncode != 0:
            raise AssertionError(f"psql failed ({result.returncode}): {commands}\n{result.stderr}")
        return result.stdout

    def query(self, sql: str) -> list:
        """Rows of `sql` run in the test's schema, as a list of dicts."""
        out = self._psql(f"SET search_path TO {self.schema}",
                         f"SELECT coalesce(json_agg(q), '[]'::json) FROM ({sql}) AS q")
        return json.loads(out)

    def execute(self, sql: str) -> None:
        """Runs `sql` (a write the test stages, such as a worker of another host) in the test's schema."""
        self._psql(f"SET search_path TO {self.schema}", sql)

    def states(self) -> dict:
        """{state: count} over the outbox."""
        return {r["state"]: r["n"] for r in self.query("SELECT state, count(*) AS n FROM outbox GROUP BY state")}

    def drop(self) -> None:
        """Drops the schema (best effort: a test that failed may have left a process holding it)."""
        try:
            self._psql("SET lock_timeout = '5s'", f"DROP SCHEMA IF EXISTS {self.schema} CASCADE", timeout=30)
        except (AssertionError, subprocess.TimeoutExpired):
            pass

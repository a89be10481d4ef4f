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

    def tallies(self) -> dict:
        """{(state, action, campaign): n} as the ledger's outbox tallies say (folded tallies plus the deltas not folded
        yet), beside `recount()`, the same counted over the outbox."""
        rows = self.query("SELECT state, action, campaign, sum(n)::bigint AS n FROM (SELECT state, action, campaign, n "
                          "FROM outbox_tallies UNION ALL SELECT state, action, campaign, n FROM outbox_tally_deltas) AS t "
                          "GROUP BY 1, 2, 3 HAVING sum(n) <> 0")
        return {(r["state"], r["action"], r["campaign"]): r["n"] for r in rows}

    def recount(self) -> dict:
        rows = self.query("SELECT state, action, coalesce(campaign_id, 0) AS campaign, count(*) AS n FROM outbox "
                          "GROUP BY 1, 2, 3")
        return {(r["state"], r["action"], r["campaign"]): r["n"] for r in rows}

    def drop(self) -> None:
        """Drops the schema (best effort: a test that failed may have left a process holding it)."""
        try:
            self._psql("SET lock_timeout = '5s'", f"DROP SCHEMA IF EXISTS {self.schema} CASCADE", timeout=30)
        except (AssertionError, subprocess.TimeoutExpired):
            pass


# --------------------------------------------------------------------------- the cluster itself (issue #44)
# Faults of the server, not of one schema: connections cut (`pg_terminate_backend`), fast restarts, the whole
# server frozen (SIGSTOP). They need the local throwaway cluster of scripts/with-postgres.sh (its data directory,
# `pg_ctl` and the postmaster's PID); against any other server the tests that use them are skipped, saying why.
import pwd  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402


def postgres_tool(name: str) -> str:
    """`pg_ctl` and friends from the newest /usr/lib/postgresql/*/bin (Debian keeps them off PATH)."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [int(x) for x in re.findall(r"\d+", p)])
    for directory in reversed(bins):
        if os.access(f"{directory}/{name}", os.X_OK):
            return f"{directory}/{name}"
    found = shutil.which(name)
    if not found:
        pytest.skip(f"{name} not found: the cluster's faults need PostgreSQL's server tools (postgresql-15)")
    return found


class PostgresCluster:
    """The server behind `base_url` as its administrator sees it: roles, backends, `pg_ctl`, its processes.

    Every query runs in a psql of its own that gives up after `timeout` (the server may be restarting or frozen)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        parts = urlsplit(base_url)
        self.user, self.host, self.port, self.database = parts.username, parts.hostname, parts.port, parts.path.lstrip("/")

    def psql(self, sql: str, *, timeout: float = 30, tries: int = 1, url: Optional[str] = None) -> str:
        argv = [psql_binary(), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url or self.base_url, "-c", sql]
        env = dict(os.environ, PGCONNECT_TIMEOUT="5")
        last = ""
        for attempt in range(tries):
            try:
                result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
                if result.returncode == 0:
                    return result.stdout
                last = result.stderr
            except subprocess.TimeoutExpired:
                last = f"timed out after {timeout}s"
            if attempt + 1 < tries:
                time.sleep(0.5)
        raise AssertionError(f"psql failed {tries} time(s): {sql}\n{last}")

    def query(self, sql: str, **kw) -> list:
        return json.loads(self.psql(f"SELECT coalesce(json_agg(q), '[]'::json) FROM ({sql}) AS q", **kw))

    # ----------------------------------------------------------------- local control
    def data_directory(self) -> Path:
        """The cluster's data directory, if this machine can control it (else the test is skipped); asked once, so
        that it is known while the server is frozen or restarting."""
        if getattr(self, "_data_directory", None) is None:
            directory = Path(self.psql("SHOW data_directory", tries=3).strip())
            if not (directory / "postmaster.pid").is_file():
                pytest.skip(f"the PostgreSQL server of HERALD_TEST_POSTGRES is not a local cluster this test can "
                            f"restart or freeze (no {directory}/postmaster.pid): run under scripts/with-postgres.sh")
            self._data_directory = directory
        return self._data_directory

    def postmaster_pid(self) -> int:
        return int((self.data_directory() / "postmaster.pid").read_text().splitlines()[0])

    def processes(self) -> list:
        """The postmaster's PID, then its children's (the backends and auxiliary processes)."""
        root = self.postmaster_pid()
        out = subprocess.run(["pgrep", "-P", str(root)], capture_output=True, text=True, timeout=10).stdout
        return [root, *(int(p) for p in out.split())]

    def pg_ctl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        """`pg_ctl -D DATA ARGS` as the cluster's owner (initdb's clusters may not belong to root)."""
        data = self.data_directory()
        owner = pwd.getpwuid(data.stat().st_uid).pw_name
        argv = [postgres_tool("pg_ctl"), "-D", str(data), *args]
        if owner != pwd.getpwuid(os.getuid()).pw_name:
            argv = ["runuser", "-u", owner, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def restart_fast(self) -> float:
        """`pg_ctl restart -m fast -w` (the options the server was started with are kept); its duration."""
        log = self.data_directory().parent / "server.log"
        started = time.monotonic()
        result = self.pg_ctl("-l", str(log), "-m", "fast", "-w", "-t", "60", "restart")
        assert result.returncode == 0, f"pg_ctl restart failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        return time.monotonic() - started

    def wait_healthy(self, timeout: float = 60) -> None:
        """Until the server answers a query (after a restart or a freeze)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.psql("SELECT 1", timeout=10).strip() == "1":
                    return
            except AssertionError:
                pass
            assert time.monotonic() < deadline, f"PostgreSQL did not answer within {timeout}s"
            time.sleep(0.3)

    # ----------------------------------------------------------------- a role of the test's own
    def create_role(self, prefix: str = "herald_t") -> str:
        """A login role (trust auth, as every role of the throwaway cluster) allowed to create its schema; the
        storm cuts only its backends, so the test's own connections survive."""
        role = f"{prefix}_{uuid.uuid4().hex[:10]}"
        self.psql(f"CREATE ROLE {role} LOGIN; GRANT CREATE, CONNECT ON DATABASE {self.database} TO {role}", tries=3)
        return role

    def drop_role(self, role: str) -> None:
        """Drops what the role owns (its schema), then the role; best effort."""
        try:
            self.psql(f"SET lock_timeout = '5s'; DROP OWNED BY {role} CASCADE; DROP ROLE IF EXISTS {role}",
                      timeout=30, tries=3)
        except AssertionError:
            pass

    def url_as(self, role: str, schema: str) -> str:
        return f"postgres://{role}@{self.host}:{self.port}/{self.database}?schema={schema}"

    def backends(self, role: str) -> int:
        return int(self.psql(f"SELECT count(*) FROM pg_stat_activity WHERE usename = '{role}'", tries=3).strip())


class TerminateStorm:
    """`pg_terminate_backend` of every client backend of `role`, every `interval` seconds, from one psql session
    of the administrator's (not `role`), in a thread: `with TerminateStorm(cluster, role) as storm: ...`;
    `storm.run(min_seconds, min_terminated, max_seconds)` blocks until both minimums are met (or max_seconds)."""

    def __init__(self, cluster: PostgresCluster, role: str, interval: float = 0.05) -> None:
        self.cluster, self.role, self.interval = cluster, role, interval
        self.rounds = 0
        self.counts: list = []
        self.proc: Optional[subprocess.Popen] = None
        self._reader: Optional[threading.Thread] = None

    def __enter__(self) -> "TerminateStorm":
        self.proc = subprocess.Popen([psql_binary(), "-X", "-q", "-At", "-d", self.cluster.base_url],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1)

        def read() -> None:
            for line in self.proc.stdout:
                if line.strip().isdigit():
                    self.counts.append(int(line))

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        return self

    @property
    def terminated(self) -> int:
        return sum(self.counts)

    def run(self, min_seconds: float, min_terminated: int, max_seconds: float) -> float:
        sql = (f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '{self.role}' "
               "AND backend_type = 'client backend' AND pid <> pg_backend_pid();\n")
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= max_seconds or (elapsed >= min_seconds and self.terminated >= min_terminated):
                return elapsed
            assert self.proc.poll() is None, "the storm's psql session ended"
            self.proc.stdin.write(sql)
            self.proc.stdin.flush()
            self.rounds += 1
            time.sleep(self.interval)

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.write("\\q\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)


class Frozen:
    """SIGSTOP every process of the cluster (the postmaster first, so it starts no new backend; then its
    children), SIGCONT them all when the block ends, whatever happens in it."""

    def __init__(self, cluster: PostgresCluster) -> None:
        self.cluster = cluster
        self.pids: list = []

    def __enter__(self) -> "Frozen":
        root = self.cluster.postmaster_pid()
        os.kill(root, signal.SIGSTOP)
        self.pids = [root]
        try:
            for _ in range(3):  # children forked just before the postmaster stopped
                for pid in self.cluster.processes()[1:]:
                    if pid not in self.pids:
                        os.kill(pid, signal.SIGSTOP)
                        self.pids.append(pid)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

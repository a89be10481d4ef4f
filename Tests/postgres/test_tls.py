"""The ledger's connection to PostgreSQL over TLS (`database.url`'s `sslmode` and `sslrootcert`, as libpq's).

scripts/with-postgres.sh starts the cluster with TLS on: a certificate for the name localhost from a CA of
its own ($HERALD_TEST_POSTGRES_CA), and a role ($HERALD_TEST_POSTGRES_TLS_USER) the server refuses without TLS.
So a `herald migrate` that succeeds as that role went over TLS, and the server's own `pg_stat_ssl` says which
connections of the ordinary role did.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import assert_one_error_line, write_config


def tls_setup(postgres):
    ca, user = os.environ.get("HERALD_TEST_POSTGRES_CA"), os.environ.get("HERALD_TEST_POSTGRES_TLS_USER")
    if not ca or not user:
        pytest.skip("HERALD_TEST_POSTGRES_CA / _TLS_USER not set: run under scripts/with-postgres.sh (make test does)")
    hostport, _, database = postgres.base_url[len("postgres://"):].partition("@")[2].partition("/")
    port = hostport.rpartition(":")[2]
    return ca, user, port, database


def migrate(herald, tmp_path: Path, name: str, url: str):
    config = write_config(tmp_path, name=f"{name}.yaml", database={"url": url})
    return herald("migrate", config=config, check=False, timeout=60)


def test_a_role_the_server_admits_only_over_tls_connects_with_each_encrypting_sslmode(postgres, herald, tmp_path):
    ca, user, port, database = tls_setup(postgres)
    schema = postgres.schema
    for n, query in enumerate(["", "sslmode=require", f"sslmode=verify-ca&sslrootcert={ca}"]):
        url = f"postgres://{user}@127.0.0.1:{port}/{database}?schema={schema}" + (f"&{query}" if query else "")
        result = migrate(herald, tmp_path, f"ok{n}", url)
        assert result.returncode == 0, (url, result.stdout, result.stderr)
    # verify-full checks the certificate's name, localhost.
    url = f"postgres://{user}@localhost:{port}/{database}?schema={schema}&sslmode=verify-full&sslrootcert={ca}"
    result = migrate(herald, tmp_path, "full", url)
    assert result.returncode == 0, (url, result.stdout, result.stderr)
    assert postgres.query("SELECT count(*) AS n FROM herald_migrations")[0]["n"] >= 1


def test_refusals_over_tls_stop_with_one_line_naming_the_cause(postgres, herald, tmp_path):
    ca, user, port, database = tls_setup(postgres)
    base = f"postgres://{user}@127.0.0.1:{port}/{database}?schema={postgres.schema}"
    # Without TLS the server refuses the role (pg_hba: hostnossl … reject).
    assert_one_error_line(migrate(herald, tmp_path, "plain", f"{base}&sslmode=disable"), "pg_hba.conf", "no encryption")
    # A certificate from another CA is not trusted.
    other = tmp_path / "other-ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=Another CA",
                    "-keyout", str(tmp_path / "other-ca.key"), "-out", str(other)], check=True, capture_output=True)
    assert_one_error_line(migrate(herald, tmp_path, "foreign", f"{base}&sslmode=verify-ca&sslrootcert={other}"),
                          "TLS failed", "CERTIFICATE_VERIFY_FAILED")
    # verify-full checks the certificate's name: it names localhost, and has no entry for the address 127.0.0.1.
    by_address = f"postgres://{user}@127.0.0.1:{port}/{database}?schema={postgres.schema}&sslmode=verify-full&sslrootcert={ca}"
    assert_one_error_line(migrate(herald, tmp_path, "address", by_address), "TLS failed", "failedToValidateHostname")
    # An unreadable CA file and an unknown sslmode are configuration errors before any connection.
    assert_one_error_line(migrate(herald, tmp_path, "noca", f"{base}&sslmode=verify-ca&sslrootcert={tmp_path}/none.pem"),
                          f"database.url: sslrootcert {tmp_path}/none.pem: ")
    assert_one_error_line(migrate(herald, tmp_path, "mode", f"{base}&sslmode=always"), "sslmode 'always' is not one of")


def test_the_default_sslmode_encrypts_when_the_server_offers_tls(postgres, server, tmp_path):
    # The ordinary role may connect either way; with the default (prefer) Herald's connections are encrypted.
    server(database={"url": postgres.url})
    rows = postgres.query(
        "SELECT bool_and(s.ssl) AS all_tls, count(*) AS n FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
        f"WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.usename = current_user")
    assert rows[0]["n"] >= 1 and rows[0]["all_tls"] is True, rows

#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL cluster: initdb into a temporary directory as an unprivileged user,
# pg_ctl on a free loopback port, and the cluster stopped and deleted when the command ends, whatever its outcome.
# The command finds the cluster in HERALD_TEST_POSTGRES (postgres://herald@127.0.0.1:PORT/herald, no password).
# The server offers TLS with a certificate for the name localhost (not its address) from a CA of its own (HERALD_TEST_POSTGRES_CA);
# the role HERALD_TEST_POSTGRES_TLS_USER may only connect over TLS.
# HERALD_POSTGRES_DURABLE=1 keeps fsync on (the benchmark). Usage: scripts/with-postgres.sh COMMAND [ARGS…]
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "with-postgres: no PostgreSQL server found (scripts/install-deps.sh installs postgresql-15)" >&2; exit 1; }

# initdb refuses to run as root: the cluster belongs to Debian's postgres user (or a user made for it).
owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  owner=postgres
  id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home herald-postgres 2>/dev/null || true
  id "$owner" >/dev/null 2>&1 || owner=herald-postgres
fi
as_owner() { if [ "$owner" = "$(id -un)" ]; then "$@"; else runuser -u "$owner" -- "$@"; fi; }

dir=$(mktemp -d /tmp/herald-postgres.XXXXXX)
chown "$owner" "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cleanup() {
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

as_owner "$bin/initdb" -D "$dir/data" -U herald --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
# TLS: a CA and the server's certificate (the name localhost only), made here; the role herald_tls is refused without TLS.
command -v openssl >/dev/null || { echo "with-postgres: openssl not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
printf 'subjectAltName=DNS:localhost\n' >"$dir/san.ext"
{ openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Herald test CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" \
    && openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" \
    && openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
      -extfile "$dir/san.ext" -out "$dir/server.crt"; } >"$dir/openssl.log" 2>&1 \
  || { echo "with-postgres: making the test certificates failed:" >&2; cat "$dir/openssl.log" >&2; exit 1; }
chown "$owner" "$dir/server.key" "$dir/server.crt"
chmod 600 "$dir/server.key"
chmod 644 "$dir/ca.crt"
{ printf 'hostnossl all herald_tls 0.0.0.0/0 reject\nhostnossl all herald_tls ::/0 reject\n'; cat "$dir/data/pg_hba.conf"; } \
  >"$dir/pg_hba.conf"
cat "$dir/pg_hba.conf" >"$dir/data/pg_hba.conf"
# Tests do not test durability (fsync off); the benchmark does (HERALD_POSTGRES_DURABLE=1 keeps PostgreSQL's defaults).
# Many test processes connect at once (max_connections).
durability="-c fsync=off -c full_page_writes=off"
[ "${HERALD_POSTGRES_DURABLE:-0}" = 1 ] && durability=""
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-h 127.0.0.1 -p $port -k $dir $durability -c max_connections=400 -c shared_buffers=128MB -c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key" \
  start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U herald herald
as_owner "$bin/psql" -q -h 127.0.0.1 -p "$port" -U herald -d herald -c "CREATE ROLE herald_tls LOGIN SUPERUSER" >/dev/null

export HERALD_TEST_POSTGRES="postgres://herald@127.0.0.1:$port/herald"
export HERALD_TEST_POSTGRES_CA="$dir/ca.crt" HERALD_TEST_POSTGRES_TLS_USER=herald_tls
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
set +e
"$@"
status=$?
exit $status

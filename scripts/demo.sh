#!/usr/bin/env bash
# `make demo`: Herald's main job on the embedded defaults. Starts a local capture SMTP server
# that writes a Maildir under var/, queues one email of each action in two locales, runs the
# worker until the queue is empty, then shows where the messages landed and the ledger.
set -euo pipefail
cd "$(dirname "$0")/.."
herald=.build/debug/herald

rm -rf var/demo && mkdir -p var/demo
python3 Tests/support/smtp_server.py --port 0 --maildir var/demo/mail >var/demo/smtp.port 2>var/demo/smtp.log &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q READY var/demo/smtp.port && break; sleep 0.1; done
port=$(awk '/READY/ {print $2}' var/demo/smtp.port)
[ -n "$port" ] || { echo "demo: the capture SMTP server did not start (see var/demo/smtp.log)" >&2; exit 1; }

export HERALD_SMTP_URL="smtp://127.0.0.1:$port/herald.local"
export HERALD_DATABASE_PATH=var/demo/herald.sqlite
# The demo mails each action twice within seconds (two locales): lift the per-address cooldown.
export HERALD_POLICY_COOLDOWN=0s
echo "== capture SMTP server on 127.0.0.1:$port, ledger in $HERALD_DATABASE_PATH"
$herald migrate
echo "== Herald owns the accounts by default (accounts.owner: herald): importing Ada's"
printf 'email,displayName,password\nada@example.com,Ada Lovelace,correct-horse-battery\n' >var/demo/accounts.csv
$herald accounts import var/demo/accounts.csv

continue_url=https://app.example.com/welcome
for locale in pl fa; do
  echo "== queueing one email of each action in locale '$locale' (prints outbox ids)"
  $herald send sign-in ada@example.com --continue-url "$continue_url" --locale "$locale"
  $herald send verify-email ada@example.com --display-name "Ada Lovelace" --continue-url "$continue_url" --locale "$locale"
  $herald send reset-password ada@example.com --locale "$locale"
  $herald send verify-and-change-email ada@example.com --new-email ada.lovelace@example.com \
    --continue-url "$continue_url" --locale "$locale"
done

echo "== running the worker until the queue is empty"
$herald worker --until-empty

echo "== messages delivered to the Maildir var/demo/mail/new:"
python3 - <<'PY'
import email, email.policy, pathlib
for path in sorted(pathlib.Path("var/demo/mail/new").iterdir(), key=lambda p: p.stat().st_mtime):
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    print(f"  {path}\n      To: {message['To']}\n      Subject: {message['Subject']}")
PY
echo "== the ledger (herald messages):"
$herald messages
echo "== open any message file above in a mail client, or preview a template: $herald templates preview verify-email --locale de --out var/demo/preview.html"

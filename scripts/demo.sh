#!/usr/bin/env bash
# `make demo`: Herald's whole job on the embedded defaults (a SQLite ledger, a local capture SMTP server).
# Starts `herald serve` with its worker, mails one message of each action, follows one link as a browser would
# (the action page, then the redemption), and ends with the ledger's audit of that link: queued, sent, clicked,
# redeemed. From a terminal, Herald keeps serving (the console's address and a one-time admin token are printed)
# until Enter is pressed.
set -euo pipefail
cd "$(dirname "$0")/.."
herald=.build/debug/herald
demo=var/demo

rm -rf "$demo" && mkdir -p "$demo"
python3 Tests/support/smtp_server.py --port 0 --maildir "$demo/mail" >"$demo/smtp.port" 2>"$demo/smtp.log" &
smtp=$!
serve=""
trap 'kill $serve $smtp 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q READY "$demo/smtp.port" && break; sleep 0.1; done
smtp_port=$(awk '/READY/ {print $2}' "$demo/smtp.port")
[ -n "$smtp_port" ] || { echo "demo: the capture SMTP server did not start (see $demo/smtp.log)" >&2; exit 1; }

# Links point at Herald's own action page: links.actionUrl defaults to server.publicUrl, the listener.
http_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export HERALD_SMTP_URL="smtp://127.0.0.1:$smtp_port/herald.local"
export HERALD_DATABASE_PATH="$demo/herald.sqlite"
export HERALD_SERVER_PORT="$http_port"
export HERALD_SERVER_ADMIN_TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
export HERALD_WORKER_POLL_INTERVAL=200ms
echo "== a capture SMTP server on 127.0.0.1:$smtp_port writes what Herald sends to the Maildir $demo/mail"
$herald migrate
echo "== Herald owns the accounts by default (accounts.owner: herald): importing Ada's"
printf 'email,displayName,password\nada@example.com,Ada Lovelace,correct-horse-battery\n' >"$demo/accounts.csv"
$herald accounts import "$demo/accounts.csv"

$herald serve >"$demo/serve.out" 2>"$demo/serve.log" &
serve=$!
for _ in $(seq 200); do grep -q READY "$demo/serve.out" && break; sleep 0.1; done
grep -q READY "$demo/serve.out" || { echo "demo: herald serve did not start (see $demo/serve.log)" >&2; exit 1; }
url="http://127.0.0.1:$http_port"
echo "== herald serve listens on $url with its worker (log: $demo/serve.log)"

echo "== queueing one email of each action (prints outbox ids)"
continue_url=https://app.example.com/welcome
$herald send sign-in ada@example.com --continue-url "$continue_url"
$herald send verify-email ada@example.com --display-name "Ada Lovelace" --continue-url "$continue_url"
$herald send reset-password ada@example.com
$herald send verify-and-change-email ada@example.com --new-email ada.lovelace@example.com --continue-url "$continue_url"

# The worker inside `herald serve` sends them; the demo reads the Maildir as a mail client would.
python3 - "$demo/mail/new" <<'PY'
import email, email.policy, pathlib, sys, time
maildir = pathlib.Path(sys.argv[1])
deadline = time.monotonic() + 60
while len(list(maildir.glob("*"))) < 4:
    if time.monotonic() > deadline:
        sys.exit(f"demo: only {len(list(maildir.glob('*')))} of 4 messages arrived within 60 s (see var/demo/serve.log)")
    time.sleep(0.2)
print(f"== four messages delivered to {maildir}:")
for path in sorted(maildir.iterdir(), key=lambda p: p.stat().st_mtime):
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    print(f"  {path.name}\n      To: {message['To']}\n      Subject: {message['Subject']}")
PY

echo "== following the verification link as a browser would: its page, then the button on it"
python3 - "$demo/mail/new" <<'PY'
import email, email.policy, html.parser, pathlib, re, sys, urllib.error, urllib.parse, urllib.request

maildir = pathlib.Path(sys.argv[1])
link = None
for path in maildir.iterdir():
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    text = message.get_body(preferencelist=("plain",)).get_content()
    found = re.search(r"https?://\S*mode=verifyEmail\S*", text)
    if found:
        link = found.group(0)
print(f"  the link in the mail: {link[:110]}…")

class Form(html.parser.HTMLParser):
    """The page's POST form: where it goes and its hidden fields."""
    def __init__(self):
        super().__init__()
        self.action, self.fields = None, {}
    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and attrs.get("method", "").lower() == "post":
            self.action = attrs.get("action")
        elif tag == "input" and attrs.get("type") == "hidden" and self.action is not None:
            self.fields[attrs["name"]] = attrs.get("value", "")

page = urllib.request.urlopen(link, timeout=10)
form = Form()
form.feed(page.read().decode())
print(f"  GET  → {page.status}: Herald's page asks to confirm (a mail scanner following the link redeems nothing)")

class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None  # the continue URL is the app's, not part of the demo

request = urllib.request.Request(urllib.parse.urljoin(link, form.action), data=urllib.parse.urlencode(form.fields).encode())
try:
    reply = urllib.request.build_opener(Stay()).open(request, timeout=10)
    print(f"  POST → {reply.status}: the address is verified")
except urllib.error.HTTPError as redirect:
    print(f"  POST → {redirect.code}: the address is verified; the browser goes on to {redirect.headers['Location']}")
PY

echo "== the ledger's audit of Ada's links (herald audit --email ada@example.com):"
$herald audit --email ada@example.com
echo
echo "== the console: open $url/admin and sign in with this one-time admin token:"
echo "   $HERALD_SERVER_ADMIN_TOKEN"
echo "== preview any template: $herald templates preview verify-email --locale de --out $demo/preview.html"
if [ -t 0 ]; then
  read -r -p "Herald keeps serving at $url; press Enter to stop. " _
fi

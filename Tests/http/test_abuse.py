"""Abuse limits on the public surface (issue #10 items 4-7): reset timing under enumeration
protection, per-client / per-account / per-project limits, plus-tag cooldowns, unknown-code
visits that grow nothing, event retention, and ID tokens of a deleted account whose uid is reused.
Every test runs a real `herald serve` with a real SQLite ledger and a real SMTP capture server."""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import subprocess
import time

import requests

from helpers import herald_env, query
from http_support import API_KEY, CONTINUE, assert_error, code_of, ok, unique_email

PASSWORD = "abuse-password-1"
ON = {"ipSendsPerMinute": 20, "ipBurst": 20, "ipSendsPerHour": 500, "ipBadCodesPerMinute": 60,
      "accountSendsPerHour": 10, "projectSendsPerHour": 10000, "ipSignUpsPerHour": 100, "signInFailuresPerAccount": 10,
      "ipSignInFailuresPerHour": 100}


def limits(**changes) -> dict:
    return {"limits": {**ON, **changes}}


def cli(srv, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(srv.binary), *args, "--config", str(srv.config)], cwd=srv.cwd, env=herald_env(), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )


def sign_in_link(srv, email: str, headers=None) -> requests.Response:
    return srv.send_oob("EMAIL_SIGNIN", email, headers=headers, continueUrl=CONTINUE, canHandleCodeInApp=True)


def rows(srv, table: str) -> int:
    return query(srv.db_path, f"SELECT COUNT(*) AS n FROM {table}")[0]["n"]


# --------------------------------------------------------------------------- item 4: timing
def test_reset_timing_does_not_tell_registered_from_unknown_emails(server):
    """A median-split classifier on one request's latency must do little better than a coin (it got ~86%)."""
    srv = server()
    registered = [unique_email(f"timing-known-{i}") for i in range(100)]
    for email in registered:
        srv.sign_up(email, PASSWORD)
    unknown = [unique_email(f"timing-nobody-{i}") for i in range(100)]
    trials = [(email, True) for email in registered] + [(email, False) for email in unknown]
    random.Random(10).shuffle(trials)
    session = requests.Session()
    url = f"{srv.url}/v1/accounts:sendOobCode?key={API_KEY}"
    for _ in range(10):  # warm the connection and the server's caches
        session.post(url, json={"requestType": "PASSWORD_RESET", "email": unique_email("warm")}, timeout=10)
    timings = []
    for email, known in trials:
        started = time.perf_counter()
        resp = session.post(url, json={"requestType": "PASSWORD_RESET", "email": email}, timeout=10)
        elapsed = time.perf_counter() - started
        assert resp.status_code == 200, resp.text
        timings.append((elapsed, known))
    threshold = statistics.median(t for t, _ in timings)
    correct = sum((t > threshold) == known for t, known in timings)
    accuracy = correct / len(timings)
    known_ms = statistics.median(t for t, k in timings if k) * 1000
    unknown_ms = statistics.median(t for t, k in timings if not k) * 1000
    print(f"median registered {known_ms:.2f} ms, unknown {unknown_ms:.2f} ms, classifier accuracy {accuracy:.0%}")
    # Either way round: a classifier that reads slow as "unknown" is as good as one that reads it as "registered".
    assert max(accuracy, 1 - accuracy) <= 0.65, f"one request tells registered from unknown {accuracy:.0%} of the time " \
                             f"(median registered {known_ms:.2f} ms, unknown {unknown_ms:.2f} ms)"
    # The suppressed requests are in the ledger, auditable, with no code.
    assert rows(srv, "suppressed_sends") >= len(unknown)
    reasons = {r["reason"] for r in query(srv.db_path, "SELECT DISTINCT reason FROM suppressed_sends")}
    assert reasons == {"EMAIL_NOT_FOUND"}, reasons


def test_change_email_timing_does_not_tell_taken_addresses_from_free_ones(server):
    """The other request enumeration protection answers without sending: VERIFY_AND_CHANGE_EMAIL to an
    address another account holds. Its latency must not tell a taken address from a free one either."""
    srv = server()
    taken = [unique_email(f"timing-taken-{i}") for i in range(100)]
    for email in taken:
        srv.sign_up(email, PASSWORD)
    movers = []
    for i in range(200):
        email = unique_email(f"timing-mover-{i}")
        movers.append(srv.sign_up(email, PASSWORD)["idToken"])
    trials = [(token, taken[i] if i < 100 else unique_email(f"timing-free-{i}"), i < 100) for i, token in enumerate(movers)]
    random.Random(11).shuffle(trials)
    session = requests.Session()
    url = f"{srv.url}/v1/accounts:sendOobCode?key={API_KEY}"
    timings = []
    for token, new_email, is_taken in trials:
        started = time.perf_counter()
        resp = session.post(url, json={"requestType": "VERIFY_AND_CHANGE_EMAIL", "idToken": token, "newEmail": new_email},
                            timeout=10)
        elapsed = time.perf_counter() - started
        assert resp.status_code == 200, resp.text
        timings.append((elapsed, is_taken))
    threshold = statistics.median(t for t, _ in timings)
    accuracy = sum((t > threshold) == k for t, k in timings) / len(timings)
    taken_ms = statistics.median(t for t, k in timings if k) * 1000
    free_ms = statistics.median(t for t, k in timings if not k) * 1000
    print(f"median taken {taken_ms:.2f} ms, free {free_ms:.2f} ms, classifier accuracy {accuracy:.0%}")
    assert max(accuracy, 1 - accuracy) <= 0.65, f"one request tells a taken address from a free one {accuracy:.0%} of the time " \
                             f"(median taken {taken_ms:.2f} ms, free {free_ms:.2f} ms)"
    reasons = {r["reason"] for r in query(srv.db_path, "SELECT DISTINCT reason FROM suppressed_sends")}
    assert reasons == {"EMAIL_EXISTS"}, reasons


def test_silent_path_keeps_the_cooldown_like_a_real_send(server):
    srv = server()
    known = unique_email("cool-known")
    srv.sign_up(known, PASSWORD)
    nobody = unique_email("cool-nobody")
    for email in (known, nobody):
        ok(srv.send_oob("PASSWORD_RESET", email))
        assert_error(srv.send_oob("PASSWORD_RESET", email), "TOO_MANY_ATTEMPTS_TRY_LATER")


# --------------------------------------------------------------------------- item 5: limits
def test_a_burst_from_one_client_is_refused_and_a_forged_forwarded_for_does_not_escape(server):
    srv = server(**limits(ipSendsPerMinute=5, ipBurst=5))
    answers = [sign_in_link(srv, unique_email(f"burst-{i}")) for i in range(8)]
    assert [r.status_code for r in answers[:5]] == [200] * 5, [r.text for r in answers]
    for resp in answers[5:]:
        assert_error(resp, "TOO_MANY_ATTEMPTS_TRY_LATER")
    # 127.0.0.1 is not a trusted proxy: its X-Forwarded-For is ignored.
    assert_error(sign_in_link(srv, unique_email("forged"), headers={"X-Forwarded-For": "198.51.100.77"}),
                 "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Admin callers are exempt.
    ok(srv.admin("accounts:sendOobCode", {"requestType": "EMAIL_SIGNIN", "email": unique_email("admin"),
                                           "continueUrl": CONTINUE, "canHandleCodeInApp": True}))
    # The refusals reach the ledger (within a second, with no later request to carry them), keyed by
    # network, never the raw address.
    time.sleep(1.2)
    assert_error(sign_in_link(srv, unique_email("late")), "TOO_MANY_ATTEMPTS_TRY_LATER")
    deadline = time.monotonic() + 5
    while True:
        # Summed over hours: a run that crosses the top of an hour counts in two rows.
        counted = query(srv.db_path, "SELECT key, SUM(count) AS count FROM abuse_counts WHERE counter = 'ip' GROUP BY key")
        if counted == [{"key": "127.0.0.0/24", "count": 5}] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert counted == [{"key": "127.0.0.0/24", "count": 5}], counted
    shown = cli(srv, "throttles")
    assert shown.returncode == 0, shown.stderr
    lines = [line.split() for line in shown.stdout.splitlines() if " ip " in line]
    assert sum(int(words[-2]) for words in lines) == 5 and {words[-1] for words in lines} == {"127.0.0.0/24"}, shown.stdout
    # A listing is bounded: another network's larger count this hour comes first, and the rest are left out, saying so.
    with sqlite3.connect(srv.db_path) as db:
        db.execute("INSERT INTO abuse_counts (counter, key, hour, count) VALUES ('ip', '192.0.2.0/24', ?, 1000)",
                   (int(time.time()) // 3600,))
    limited = cli(srv, "throttles", "--limit", "1", "--format", "jsonl")
    assert limited.returncode == 0, limited.stderr
    assert [json.loads(line)["key"] for line in limited.stdout.splitlines()] == ["192.0.2.0/24"], limited.stdout
    assert "showing the first 1 rows; --limit shows more" in limited.stderr, limited.stderr


def test_behind_a_trusted_proxy_the_forwarded_client_is_limited(server):
    srv = server(**limits(ipSendsPerMinute=3, ipBurst=3, trustedProxies=["127.0.0.1"]))
    first = {"X-Forwarded-For": "198.51.100.1"}
    for i in range(3):
        ok(sign_in_link(srv, unique_email(f"proxied-{i}"), headers=first))
    assert_error(sign_in_link(srv, unique_email("proxied-4"), headers=first), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # A client prepending its own hop is still the right-most untrusted address.
    spoofed = {"X-Forwarded-For": "203.0.113.9, 198.51.100.1"}
    assert_error(sign_in_link(srv, unique_email("spoofed"), headers=spoofed), "TOO_MANY_ATTEMPTS_TRY_LATER")
    ok(sign_in_link(srv, unique_email("other"), headers={"X-Forwarded-For": "198.51.100.2"}))


def test_plus_tag_and_case_variants_share_one_cooldown(server):
    srv = server(**limits())
    victim = unique_email("victim")
    local, domain = victim.split("@")
    ok(sign_in_link(srv, f"{local}+1@{domain}"))
    for variant in (f"{local}+2@{domain}", f"{local.upper()}+3@{domain}", victim):
        assert_error(sign_in_link(srv, variant), "TOO_MANY_ATTEMPTS_TRY_LATER")
    assert len(srv.mail_to(f"{local}+1@{domain}")) == 1


def test_gmail_dots_and_domains_share_one_cooldown_unless_turned_off(server):
    srv = server(**limits())
    local = unique_email("gm").split("@")[0].replace("-", "").replace(".", "")
    dotted = f"{local[:2]}.{local[2:]}@gmail.com"
    ok(sign_in_link(srv, dotted))
    for variant in (f"{local}@gmail.com", f"{local[:1]}.{local[1:]}+x@googlemail.com", f"{local.upper()}@GoogleMail.com"):
        assert_error(sign_in_link(srv, variant), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Dots count at every other domain.
    ok(sign_in_link(srv, f"{local}@example.com"))
    ok(sign_in_link(srv, f"{local[:2]}.{local[2:]}@example.com"))
    assert len(srv.mail_to(dotted)) == 1

    srv = server(**limits(dotlessDomains=[], ignorePlusTags=False))
    ok(sign_in_link(srv, dotted))
    ok(sign_in_link(srv, f"{local}@gmail.com"))
    ok(sign_in_link(srv, f"{local}+x@gmail.com"))


def test_one_network_spends_only_its_share_of_the_project_quota(server):
    """The probe's case: many addresses together spending the project's hourly quota. Each network (/24, /48) may
    take its share (10% by default), then gets TOO_MANY_ATTEMPTS while everyone else is still served."""
    srv = server(**limits(projectSendsPerHour=100, trustedProxies=["127.0.0.1"]))
    for i in range(10):
        ok(sign_in_link(srv, unique_email(f"share-{i}"), headers={"X-Forwarded-For": f"198.51.100.{i + 1}"}))
    for i in range(5):
        refused = sign_in_link(srv, unique_email(f"share-over-{i}"), headers={"X-Forwarded-For": f"198.51.100.{100 + i}"})
        assert_error(refused, "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Silent requests count to the share alike.
    assert_error(srv.send_oob("PASSWORD_RESET", unique_email("share-nobody"), headers={"X-Forwarded-For": "198.51.100.200"}),
                 "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Other networks, IPv4 and IPv6, are served; the refused requests counted nothing against the project.
    ok(sign_in_link(srv, unique_email("share-other"), headers={"X-Forwarded-For": "203.0.113.7"}))
    ok(sign_in_link(srv, unique_email("share-v6"), headers={"X-Forwarded-For": "2001:db8:1:2::7"}))
    counts = {row["scope"]: row["count"] for row in query(srv.db_path, "SELECT scope, SUM(count) AS count FROM send_counts GROUP BY scope")}
    assert counts["project"] == 12 and counts["network"] == 12, counts


def test_ipv6_clients_group_by_the_configured_prefix(server):
    v6 = [f"2001:db8:1:{n}::1" for n in range(1, 5)]
    srv = server(**limits(ipSendsPerMinute=3, ipBurst=3, trustedProxies=["127.0.0.1"]))
    # By default each /64 is a client of its own.
    for n, address in enumerate(v6):
        ok(sign_in_link(srv, unique_email(f"v6-{n}"), headers={"X-Forwarded-For": address}))
    srv = server(**limits(ipSendsPerMinute=3, ipBurst=3, trustedProxies=["127.0.0.1"], ipv6ClientPrefix=48))
    for n, address in enumerate(v6[:3]):
        ok(sign_in_link(srv, unique_email(f"v48-{n}"), headers={"X-Forwarded-For": address}))
    assert_error(sign_in_link(srv, unique_email("v48-4"), headers={"X-Forwarded-For": v6[3]}), "TOO_MANY_ATTEMPTS_TRY_LATER")
    ok(sign_in_link(srv, unique_email("v48-other"), headers={"X-Forwarded-For": "2001:db8:2::1"}))


def test_the_project_quota_answers_quota_exceeded(server):
    # Every request here comes from one network: its share is turned off to reach the project's quota.
    srv = server(**limits(projectSendsPerHour=3, projectSharePerNetwork=0))
    for i in range(3):
        ok(sign_in_link(srv, unique_email(f"quota-{i}")))
    assert_error(sign_in_link(srv, unique_email("quota-4")), "QUOTA_EXCEEDED")
    # Silent requests count too, and are refused alike.
    assert_error(srv.send_oob("PASSWORD_RESET", unique_email("quota-nobody")), "QUOTA_EXCEEDED")
    ok(srv.admin("accounts:sendOobCode", {"requestType": "EMAIL_SIGNIN", "email": unique_email("quota-admin"),
                                           "continueUrl": CONTINUE, "canHandleCodeInApp": True}))


def test_one_signed_in_account_cannot_send_unbounded_change_email_mail(server):
    srv = server(**limits(accountSendsPerHour=3), policy={"cooldown": "0s"})
    token = srv.sign_up(unique_email("changer"), PASSWORD)["idToken"]
    for i in range(3):
        ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=token, newEmail=unique_email(f"new-{i}")))
    assert_error(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=token, newEmail=unique_email("new-4")),
                 "TOO_MANY_ATTEMPTS_TRY_LATER")
    assert_error(srv.send_oob("VERIFY_EMAIL", idToken=token), "TOO_MANY_ATTEMPTS_TRY_LATER")


# --------------------------------------------------------------------------- item 6: ledger growth
def test_unknown_code_visits_add_no_rows_and_real_clicks_are_recorded(server):
    srv = server(**limits(ipBadCodesPerMinute=100))
    before_events = rows(srv, "link_events")
    session = requests.Session()
    for i in range(300):
        page = session.get(srv.action_page_url(mode="resetPassword", oobCode=f"bogus{i:06d}", apiKey=API_KEY), timeout=10)
        assert page.status_code == 400 and "text/html" in page.headers["Content-Type"]
    for i in range(50):
        assert_error(srv.post("accounts:resetPassword", {"oobCode": f"bogus-api-{i}", "newPassword": PASSWORD}),
                     "INVALID_OOB_CODE")
    assert rows(srv, "link_events") == before_events, "unknown codes must not add link_events rows"
    # Summed over hours: a run that crosses the top of an hour counts in two rows.
    counters = query(srv.db_path, "SELECT counter, key, SUM(count) AS count FROM abuse_counts GROUP BY counter, key")
    assert [(c["counter"], c["key"]) for c in counters] == [("unknown-code", "127.0.0.0/24")], counters
    # Counted up to the client's limit (100 a minute, refilling while the test runs), then not at all.
    assert 100 <= counters[0]["count"] <= 130, counters
    # A real code's click is still recorded.
    link = srv.oob("EMAIL_SIGNIN", unique_email("real"), continueUrl=CONTINUE, canHandleCodeInApp=True)["oobLink"]
    requests.get(srv.local(link), timeout=10, allow_redirects=False)
    clicks = query(srv.db_path, "SELECT code_id FROM link_events WHERE kind = 'click'")
    assert len(clicks) == 1 and clicks[0]["code_id"] is not None, clicks


def test_reloading_one_real_codes_page_adds_a_bounded_number_of_rows(server):
    """Anyone can get one real code (a sign-in link to their own mailbox) and reload its page for ever:
    a code keeps its first 20 clicks and rejections as rows, and its redemption always."""
    srv = server()
    email = unique_email("reload")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("PASSWORD_RESET", email, continueUrl=CONTINUE)["oobLink"]
    session = requests.Session()
    for _ in range(150):
        assert session.get(srv.local(link), timeout=10).status_code == 200
        assert session.head(srv.local(link), timeout=10).status_code == 200
    for _ in range(30):  # forged form posts are rejections of the same code
        resp = session.post(srv.url + "/__/auth/action", data={"mode": "resetPassword", "oobCode": code_of(link),
                                                                "apiKey": API_KEY, "newPassword": "x-123456789"},
                            timeout=10, allow_redirects=False)
        assert resp.status_code == 403
    events = query(srv.db_path, "SELECT kind, COUNT(*) AS n FROM link_events GROUP BY kind")
    assert sum(e["n"] for e in events) == 20, events
    ok(srv.post("accounts:resetPassword", {"oobCode": code_of(link), "newPassword": "another-pw-123"}))
    redeemed = query(srv.db_path, "SELECT COUNT(*) AS n FROM link_events WHERE kind = 'redeemed'")
    assert redeemed[0]["n"] == 1, redeemed


def test_retention_prunes_old_events_and_counters(server):
    srv = server("--no-worker")
    day = 86_400_000
    now = int(time.time() * 1000)
    with sqlite3.connect(srv.db_path) as db:
        db.execute("PRAGMA busy_timeout = 5000")
        for at in (now - 100 * day, now - day):
            db.execute("INSERT INTO link_events (code_id, kind, at, ip) VALUES (NULL, 'click', ?, '192.0.2.1')", (at,))
            db.execute("INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) "
                       "VALUES ('resetPassword', 'x@example.com', 'EMAIL_NOT_FOUND', ?)", (at,))
            db.execute("INSERT INTO abuse_counts (counter, key, hour, count) VALUES ('ip', '192.0.2.0/24', ?, 3)",
                       (at // 3_600_000,))
    drained = cli(srv, "worker", "--until-empty")
    assert drained.returncode == 0, drained.stderr
    for table, column in (("link_events", "at"), ("suppressed_sends", "requested_at"), ("abuse_counts", "hour * 3600000")):
        left = query(srv.db_path, f"SELECT {column} AS t FROM {table}")
        assert [r["t"] // day for r in left] == [(now - day) // day], (table, left)


# --------------------------------------------------------------------------- item 7a: reused localId
def test_a_token_of_a_deleted_account_never_speaks_for_a_recreated_one(server):
    srv = server()
    email = unique_email("reborn")
    local_id = "reborn-" + str(random.randrange(10**9))
    ok(srv.admin("accounts", {"localId": local_id, "email": email, "password": PASSWORD}))
    old_token = ok(srv.sign_in(email, PASSWORD))["idToken"]
    ok(srv.admin("accounts:delete", {"localId": local_id}))
    ok(srv.admin("accounts", {"localId": local_id, "email": email, "password": PASSWORD}))
    assert_error(srv.lookup(old_token), "USER_NOT_FOUND")
    fresh = ok(srv.sign_in(email, PASSWORD))["idToken"]
    assert ok(srv.lookup(fresh))["users"][0]["localId"] == local_id


def test_direct_email_changes_count_against_the_account_quota(server):
    """Without enumeration protection a user may change their email directly, and each change mails a
    recovery notice to the address it replaced (always: it is a security notice). The changes count
    against the account's hourly quota, so switching back and forth cannot mail an address without end."""
    srv = server(server={"enumerationProtection": False}, **limits(accountSendsPerHour=3))
    email = unique_email("flip")
    token = srv.sign_up(email, PASSWORD)["idToken"]
    victim = unique_email("flip-victim")
    for n in range(3):
        changed = ok(srv.post("accounts:update", {"idToken": token, "email": victim if n % 2 == 0 else email,
                                                  "returnSecureToken": True}))
        token = changed["idToken"]
    refused = srv.post("accounts:update", {"idToken": token, "email": unique_email("flip-more"), "returnSecureToken": True})
    assert_error(refused, "TOO_MANY_ATTEMPTS_TRY_LATER")
    # The refused change changed nothing: the account still has the address of the third change.
    assert srv.admin_user(victim) is not None


# --------------------------------------------------------------------------- password guessing and sign-ups
def sign_in(srv, email: str, password: str) -> requests.Response:
    return srv.post("accounts:signInWithPassword", {"email": email, "password": password, "returnSecureToken": True})


def test_password_guessing_locks_the_address_for_a_while_and_reveals_nothing(server):
    srv = server(**limits(signInFailuresPerAccount=3))
    email = unique_email("guess")
    srv.sign_up(email, PASSWORD)
    for _ in range(3):
        assert_error(sign_in(srv, email, "wrong-guess-1"), "INVALID_LOGIN_CREDENTIALS")
    # Now even the right password is refused, without being checked.
    assert_error(sign_in(srv, email, PASSWORD), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # An address without an account behaves the same: the lock tells nothing about who is registered.
    nobody = unique_email("guess-nobody")
    for _ in range(3):
        assert_error(sign_in(srv, nobody, "wrong-guess-1"), "INVALID_LOGIN_CREDENTIALS")
    assert_error(sign_in(srv, nobody, "wrong-guess-1"), "TOO_MANY_ATTEMPTS_TRY_LATER")
    # Other accounts are not affected, and the refusals show in the ledger.
    other = unique_email("guess-other")
    srv.sign_up(other, PASSWORD)
    ok(sign_in(srv, other, PASSWORD))
    # Both refusals reach abuse_counts within a second or so (written every second), keyed by a hash.
    deadline = time.monotonic() + 5
    while True:
        counts = query(srv.db_path, "SELECT key, count FROM abuse_counts WHERE counter = 'signin-account'")
        if sum(c["count"] for c in counts) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sum(c["count"] for c in counts) == 2 and all("@" not in c["key"] for c in counts), counts


def test_password_guessing_across_accounts_is_limited_per_client(server):
    srv = server(**limits(signInFailuresPerAccount=0, ipSignInFailuresPerHour=5))
    for i in range(5):
        assert_error(sign_in(srv, unique_email(f"spray-{i}"), "wrong-guess-1"), "INVALID_LOGIN_CREDENTIALS")
    assert_error(sign_in(srv, unique_email("spray-next"), "wrong-guess-1"), "TOO_MANY_ATTEMPTS_TRY_LATER")


def test_sign_ups_are_limited_per_client_and_admins_are_exempt(server):
    srv = server(**limits(ipSignUpsPerHour=3))
    for i in range(3):
        srv.sign_up(unique_email(f"signup-{i}"), PASSWORD)
    refused = srv.post("accounts:signUp", {"email": unique_email("signup-more"), "password": PASSWORD})
    assert_error(refused, "TOO_MANY_ATTEMPTS_TRY_LATER")
    ok(srv.admin("accounts", {"email": unique_email("signup-admin"), "password": PASSWORD}))

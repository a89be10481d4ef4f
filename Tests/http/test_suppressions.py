"""The suppression list behind every entry point, and one-click unsubscribe (RFC 8058) over real HTTP.

A suppressed address (a hard bounce, a complaint, a manual entry) gets no transactional mail: `herald send`,
admin `accounts:sendOobCode` and a bulk send refuse it with RECIPIENT_SUPPRESSED, an app caller under
enumeration protection gets the usual silent success, and a campaign import rejects the row with the reason.
An unsubscribe stops campaign mail only: password resets still go. The unsubscribe link's GET changes nothing
and shows a confirm page; the one-click POST unsubscribes without a page to read.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

from helpers import herald_env, query, wait_until
from http_support import ADMIN_TOKEN, CONTINUE, assert_error, ok, unique_email

PASSWORD = "suppression-password-1"
UNSUBSCRIBE_URL = "https://app.example.com/unsubscribe"
PAGE_STRINGS = {path.stem: json.loads(path.read_text(encoding="utf-8"))
                for path in (Path(__file__).resolve().parents[2] / "templates" / "pages" / "strings").glob("*.json")}


def cli(srv, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(srv.binary), *args, "--config", str(srv.config)], cwd=srv.cwd, env=herald_env(),
        input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True, timeout=60,
    )


def admin_api(srv, method: str, path: str, token: str = ADMIN_TOKEN, headers: dict | None = None,
              **kwargs) -> requests.Response:
    return requests.request(method, f"{srv.url}/admin/{path}", headers={"Authorization": f"Bearer {token}", **(headers or {})},
                            timeout=10, **kwargs)


def outbox_rows(srv) -> int:
    return query(srv.db_path, "SELECT COUNT(*) AS n FROM outbox")[0]["n"]


def campaign_rejects(srv, action: str, emails: list, name: str) -> list:
    recipients = srv.cwd / f"{name}.csv"
    recipients.write_text("email\n" + "".join(f"{e}\n" for e in emails), encoding="utf-8")
    result = cli(srv, "campaign", "create", name, "--action", action, "--recipients", str(recipients),
                 "--continue-url", CONTINUE)
    assert result.returncode == 0, result.stderr
    with open(f"{recipients}.rejects.csv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_suppressed_address_is_refused_on_every_entry_point(server):
    srv = server("--no-worker", policy={"cooldown": "0s"})
    dead, alive = unique_email("dead"), unique_email("alive")
    srv.sign_up(dead, PASSWORD)
    srv.sign_up(alive, PASSWORD)
    added = ok(admin_api(srv, "POST", "suppressions", json={"emails": [dead.upper()], "reason": "hard-bounce",
                                                            "detail": "550 5.1.1 user unknown"}))
    assert added == {"added": 1, "alreadySuppressed": 0}, added
    entry = ok(admin_api(srv, "GET", f"suppressions/{dead}"))
    assert (entry["email"], entry["reason"], entry["scope"]) == (dead, "hard-bounce", "all"), entry
    before = outbox_rows(srv)

    result = cli(srv, "send", "reset-password", dead)
    assert result.returncode == 4 and b"RECIPIENT_SUPPRESSED" in result.stderr, result  # 4: refused by a limit
    assert_error(srv.admin("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": dead}), "RECIPIENT_SUPPRESSED")
    body = ok(srv.send_oob("PASSWORD_RESET", dead))  # enumeration protection: the usual answer, nothing queued
    assert body["email"] == dead
    bulk = srv.cwd / "bulk.txt"
    bulk.write_text(f"{alive}\n{dead}\n", encoding="utf-8")
    result = cli(srv, "send", "reset-password", "--recipients", str(bulk))
    assert result.returncode == 4 and b"RECIPIENT_SUPPRESSED" in result.stderr and f"{bulk}:2".encode() in result.stderr, result
    rejects = campaign_rejects(srv, "reset-password", [alive, dead], "resets")
    assert [(r["line"], r["reason"]) for r in rejects] == [("3", "RECIPIENT_SUPPRESSED (hard-bounce)")], rejects
    assert outbox_rows(srv) == before + 1, "only the campaign row of the live address may be queued"
    # A returned link sends no mail, so the list does not stand in its way.
    assert ok(srv.admin("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": dead, "returnOobLink": True}))["oobLink"]

    assert ok(admin_api(srv, "DELETE", f"suppressions/{dead}")) == {"removed": True}
    assert admin_api(srv, "DELETE", f"suppressions/{dead}").status_code == 404
    assert cli(srv, "send", "reset-password", dead).returncode == 0, "a removed address is mailed again"


def test_admin_api_and_cli_list_import_and_export_the_same_list(server):
    srv = server("--no-worker")
    assert admin_api(srv, "GET", "suppressions").status_code == 200
    assert admin_api(srv, "GET", "suppressions", token="wrong").status_code in (401, 403)
    assert_error(admin_api(srv, "POST", "suppressions", json={"emails": ["not-an-address"]}), "INVALID_EMAIL")
    assert_error(admin_api(srv, "POST", "suppressions", json={"emails": ["a@x.test"], "reason": "bogus"}), "INVALID_ARGUMENT")
    listing = srv.cwd / "list.csv"
    listing.write_text("email,reason,detail\nA@X.test,complaint,abuse report\nb@x.test,,\nnot an address,manual,\n"
                       "c@x.test,unsubscribe,\n", encoding="utf-8")
    result = cli(srv, "suppressions", "import", str(listing))
    assert result.returncode == 1 and b"line 4" in result.stderr, result  # the bad line named, the rest imported
    page = ok(admin_api(srv, "GET", "suppressions"))
    got = {(e["email"], e["reason"], e["scope"]) for e in page["suppressions"]}
    assert got == {("a@x.test", "complaint", "all"), ("b@x.test", "manual", "all"), ("c@x.test", "unsubscribe", "campaigns")}, page
    limited = ok(admin_api(srv, "GET", "suppressions", params={"limit": 2}))
    assert len(limited["suppressions"]) == 2 and limited["next"] == "b@x.test", limited
    rest = ok(admin_api(srv, "GET", "suppressions", params={"after": limited["next"]}))
    assert [e["email"] for e in rest["suppressions"]] == ["c@x.test"] and "next" not in rest, rest

    exported = cli(srv, "suppressions", "export")
    assert exported.returncode == 0, exported
    rows = list(csv.DictReader(exported.stdout.decode().splitlines()))
    assert [(r["email"], r["reason"], r["scope"], r["detail"]) for r in rows] == [
        ("a@x.test", "complaint", "all", "abuse report"), ("b@x.test", "manual", "all", ""),
        ("c@x.test", "unsubscribe", "campaigns", "")], rows
    over_http = admin_api(srv, "GET", "suppressions", params={"format": "csv"})
    assert over_http.status_code == 200 and over_http.headers["content-type"].startswith("text/csv"), over_http
    assert over_http.text == exported.stdout.decode(), "the admin API exports what the CLI exports"
    imported = ok(admin_api(srv, "POST", "suppressions", data="email,reason\nd@x.test,complaint\nbad,manual\n",
                            headers={"Content-Type": "text/csv"}))
    assert imported["added"] == 1 and len(imported["rejectedLines"]) == 1 and "line 3" in imported["rejectedLines"][0], imported
    assert ok(admin_api(srv, "GET", "suppressions/d@x.test"))["reason"] == "complaint"
    assert ok(admin_api(srv, "DELETE", "suppressions/d@x.test")) == {"removed": True}
    assert cli(srv, "suppressions", "remove", "b@x.test").returncode == 0
    missing = cli(srv, "suppressions", "remove", "b@x.test")
    assert missing.returncode == 3 and b"not on the suppression list" in missing.stderr, missing  # 3: not found
    assert missing.stdout == b"", "no 'removed 0' beside the error"
    reimport = srv.cwd / "export.csv"
    reimport.write_bytes(exported.stdout)
    again = cli(srv, "suppressions", "import", str(reimport))
    assert again.returncode == 0 and b"1 added" in again.stdout, again


def unsubscribe_link(message) -> str:
    targets = re.findall(r"<([^<>]*)>", str(message["List-Unsubscribe"]))
    [https] = [t for t in targets if t.startswith("https://")]
    assert https.startswith(UNSUBSCRIBE_URL + "?token="), https
    return https


def test_one_click_unsubscribe_stops_campaign_mail_but_not_password_resets(server):
    srv = server(campaigns={"unsubscribeUrl": UNSUBSCRIBE_URL}, policy={"cooldown": "0s"})
    reader, other = unique_email("reader"), unique_email("other")
    for address in (reader, other):
        srv.sign_up(address, PASSWORD)
    campaign_rejects(srv, "verify-email", [reader, other], "news")
    mails = wait_until(lambda: [m for m in srv.capture.messages() if m["rcpt_tos"] == [reader]], 30, "the campaign mail")
    message = mails[0]["message"]
    link = unsubscribe_link(message)
    assert str(message["List-Unsubscribe-Post"]).strip() == "List-Unsubscribe=One-Click"
    path = srv.url + urlsplit(link).path + "?" + urlsplit(link).query
    token = parse_qs(urlsplit(link).query)["token"][0]

    # GET (a person, or a scanner pre-fetching the link) changes nothing.
    for _ in range(2):
        page = requests.get(path, timeout=10)
        assert page.status_code == 200 and reader in page.text and 'action=""' in page.text, page.text
    assert query(srv.db_path, "SELECT COUNT(*) AS n FROM suppressions")[0]["n"] == 0
    # The page speaks the mail's language, or the one asked for (`lang`), right to left where it is written so.
    for lang, strings in (("fa", PAGE_STRINGS["fa"]), ("de", PAGE_STRINGS["de"]), ("pl", PAGE_STRINGS["pl"])):
        page = requests.get(f"{path}&lang={lang}", timeout=10)
        assert page.status_code == 200, page.text
        assert f'lang="{lang}"' in page.text and strings["button_unsubscribe"] in page.text, (lang, page.text[:600])
        assert ('dir="rtl"' in page.text) == (lang == "fa"), (lang, page.text[:300])
    assert query(srv.db_path, "SELECT COUNT(*) AS n FROM suppressions")[0]["n"] == 0

    forged = requests.post(srv.url + "/unsubscribe?token=" + token[:-2] + "AA", data="List-Unsubscribe=One-Click",
                           headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
    assert forged.status_code == 400
    assert requests.get(srv.url + "/unsubscribe?token=1.nope", timeout=10).status_code == 400
    assert query(srv.db_path, "SELECT COUNT(*) AS n FROM suppressions")[0]["n"] == 0

    # The mailbox provider's one-click POST: RFC 8058's body, no cookies, no page to read.
    for _ in range(2):  # twice is the same as once
        done = requests.post(path, data="List-Unsubscribe=One-Click",
                             headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=10)
        assert done.status_code == 200, done.text
    rows = query(srv.db_path, "SELECT email, reason, scope FROM suppressions")
    assert [(r["email"], r["reason"], r["scope"]) for r in rows] == [(reader, "unsubscribe", "campaigns")], rows
    events = query(srv.db_path, "SELECT kind FROM mail_feedback")
    assert [e["kind"] for e in events] == ["unsubscribe", "unsubscribe"], events

    rejects = campaign_rejects(srv, "verify-email", [reader, other], "news-2")
    assert [r["reason"] for r in rejects] == ["RECIPIENT_SUPPRESSED (unsubscribe)"], rejects
    # Password resets and sign-in links still reach the person who asks for one.
    ok(srv.send_oob("PASSWORD_RESET", reader))
    wait_until(lambda: [m for m in srv.capture.messages() if m["rcpt_tos"] == [reader] and
                        "List-Unsubscribe" not in str(m["message"])], 30, "the password reset")
    ok(srv.send_oob("EMAIL_SIGNIN", reader, continueUrl=CONTINUE, canHandleCodeInApp=True))
    wait_until(lambda: len([m for m in srv.capture.messages() if m["rcpt_tos"] == [reader] and
                            "List-Unsubscribe" not in str(m["message"])]) == 2, 30, "the sign-in link")


def test_rows_queued_before_a_suppression_are_not_sent(server):
    srv = server("--no-worker", campaigns={"unsubscribeUrl": UNSUBSCRIBE_URL}, policy={"cooldown": "0s"})
    early, late = unique_email("early"), unique_email("late")
    for address in (early, late):
        srv.sign_up(address, PASSWORD)
    campaign_rejects(srv, "verify-email", [early, late], "queued-first")
    transactional = int(cli(srv, "send", "reset-password", early).stdout.decode().strip())
    assert cli(srv, "suppressions", "add", early, "--reason", "unsubscribe").returncode == 0
    assert cli(srv, "suppressions", "add", late, "--reason", "complaint").returncode == 0
    result = cli(srv, "worker", "--until-empty")
    assert result.returncode == 0, result
    rows = {(r["recipient"], r["campaign_id"] is not None): r for r in
            query(srv.db_path, "SELECT id, recipient, campaign_id, state, last_reply FROM outbox")}
    assert rows[(early, True)]["state"] == "cancelled" and "unsubscribe" in rows[(early, True)]["last_reply"], rows
    assert rows[(late, True)]["state"] == "cancelled" and "complaint" in rows[(late, True)]["last_reply"], rows
    assert rows[(early, False)]["state"] == "sent" and rows[(early, False)]["id"] == transactional, rows
    assert [m["rcpt_tos"] for m in srv.capture.messages()] == [[early]]


def test_admin_api_retries_and_cancels_what_the_cli_does(server):
    srv = server("--no-worker", policy={"cooldown": "0s"})
    ada = unique_email("retry")
    srv.sign_up(ada, PASSWORD)
    first = int(cli(srv, "send", "reset-password", ada).stdout.decode().strip())
    second = int(cli(srv, "send", "reset-password", ada).stdout.decode().strip())
    dry = ok(admin_api(srv, "POST", "messages:cancel", json={"email": ada, "dryRun": True}))
    assert dry == {"count": 2, "ids": [str(first), str(second)], "dryRun": True}, dry
    done = ok(admin_api(srv, "POST", "messages:cancel", json={"email": ada}))
    assert done["count"] == 2 and not done["dryRun"]
    assert {r["state"] for r in query(srv.db_path, "SELECT state FROM outbox")} == {"cancelled"}
    again = ok(admin_api(srv, "POST", "messages:retry", json={"states": ["cancelled"], "since": "2000-01-01T00:00:00Z"}))
    assert again["count"] == 2
    rows = query(srv.db_path, "SELECT state, attempts, last_reply FROM outbox")
    assert {(r["state"], r["attempts"], r["last_reply"]) for r in rows} == {("queued", 0, "retried by admin-api")}
    events = [(e["kind"], e["actor"]) for e in query(srv.db_path, "SELECT kind, actor FROM outbox_events ORDER BY id")]
    assert events == [("cancelled", "admin-api")] * 2 + [("retried", "admin-api")] * 2
    assert_error(admin_api(srv, "POST", "messages:retry", json={"states": ["sent"]}), "ARGUMENT_ERROR")
    assert_error(admin_api(srv, "POST", "messages:retry", json={"since": "yesterday"}), "INVALID_ARGUMENT")
    assert admin_api(srv, "POST", "messages:retry", json={}, token="wrong").status_code in (401, 403)

"""One truth about campaigns: the console's campaigns page, its report page, `herald campaigns list --format json` and
the admin API (`GET /admin/campaigns/{id}` as JSON, and the list `GET /admin/campaigns` with the bearer token) state
the same status and the same counts, for a campaign in each status: scheduled, active (rate-limited, mail still to
go), paused, cancelled and done (one address refused); and the same live rate and ETA for the active one.
"""

from __future__ import annotations

import json
import time

import requests

from campaign_support import campaign_from_csv, iso_seconds, run
from console_support import PASSWORD, REFUSED_DOMAIN
from helpers import query, wait_until
from http_support import ADMIN_TOKEN, HTTP_TIMEOUT, unique_email


def new_campaign(ledger, name: str, emails: list, *options) -> int:
    for email in emails:
        ledger.srv.sign_up(email, PASSWORD)
    return campaign_from_csv(ledger.cli, ledger.srv.config, ledger.srv.cwd, f"{name}-{time.monotonic_ns()}", emails,
                             *options)


def rows(srv, cid: int) -> list:
    return [r["state"] for r in query(srv.db_path, "SELECT state FROM outbox WHERE campaign_id = ? ORDER BY id", (cid,))]


def what_each_says(client, session, ledger, cid: int) -> dict:
    """{reader: (status, sent, total, failed)} from the console's list, its report page, the CLI and the admin API."""
    srv = ledger.srv
    page = client.page("/admin/campaigns", session)
    row = page.one(f"tr#campaign-{cid}")
    console = (row.one("td.state").text, int(row.one("span.sent").text), int(row.one("span.total").text),
               int(row.one("td.failed").text))
    report_page = client.page(f"/admin/campaigns/{cid}", session)
    assert report_page.select_one("nav#nav") is not None, "the report page is not inside the console's layout"
    listed = json.loads(run(ledger.cli, "campaigns", "list", "--format", "json", config=srv.config).stdout)
    entry = next(c for c in listed if c["id"] == cid)
    cli = (entry["state"], entry["sent"], entry["imported"], entry["failed"])
    api = requests.get(f"{srv.url}/admin/campaigns/{cid}", timeout=HTTP_TIMEOUT,
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": "application/json"})
    assert api.status_code == 200 and api.headers["Content-Type"].startswith("application/json"), api.text[:300]
    report = api.json()
    counts = report["counts"]
    admin = (report["campaign"]["state"], report["sent"], report["total"], counts["failed"] + counts["dead"])
    listing = next(c for c in admin_list(srv) if c["id"] == cid)
    return {"console": console, "report page": (report_page.one("span.status").text,) + console[1:],
            "cli": cli, "admin api": admin,
            "admin list": (listing["state"], listing["sent"], listing["imported"], listing["failed"])}


def admin_list(srv) -> list:
    """`GET /admin/campaigns` with the admin API's bearer token, as JSON."""
    resp = requests.get(f"{srv.url}/admin/campaigns", timeout=HTTP_TIMEOUT, allow_redirects=False,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": "application/json"})
    assert resp.status_code == 200 and resp.headers["Content-Type"].startswith("application/json"), \
        (resp.status_code, resp.text[:300])
    return resp.json()


def assert_agree(client, session, ledger, cid: int, status: str, sent: int, total: int, failed: int) -> None:
    seen = what_each_says(client, session, ledger, cid)
    expected = (status, sent, total, failed)
    wrong = {reader: said for reader, said in seen.items() if said != expected}
    assert not wrong, f"campaign {cid}: expected {expected}, but {wrong} (all: {seen}; rows {rows(ledger.srv, cid)})"


def test_every_reader_states_the_same_status_and_counts(client, session, ledger):
    later = iso_seconds(time.time() + 3600)

    scheduled = new_campaign(ledger, "agree-scheduled", [unique_email("agree-s1"), unique_email("agree-s2")],
                             "--start-at", later)
    assert_agree(client, session, ledger, scheduled, "scheduled", 0, 2, 0)
    # Its start shows wherever it is listed.
    entry = next(c for c in json.loads(run(ledger.cli, "campaigns", "list", "--format", "json",
                                           config=ledger.srv.config).stdout) if c["id"] == scheduled)
    assert entry["startAt"] == later, entry
    assert later in client.page("/admin/campaigns", session).one(f"tr#campaign-{scheduled} td.progress").text

    paused = new_campaign(ledger, "agree-paused", [unique_email("agree-p1")], "--start-at", later)
    run(ledger.cli, "campaigns", "pause", str(paused), config=ledger.srv.config)
    assert_agree(client, session, ledger, paused, "paused", 0, 1, 0)

    cancelled = new_campaign(ledger, "agree-cancelled", [unique_email("agree-c1"), unique_email("agree-c2")],
                             "--start-at", later)
    run(ledger.cli, "campaigns", "cancel", str(cancelled), config=ledger.srv.config)
    assert_agree(client, session, ledger, cancelled, "cancelled", 0, 2, 0)

    # Done: three rows, one refused for good by the relay (550), none left to send.
    done = new_campaign(ledger, "agree-done", [unique_email("agree-d1"), unique_email("agree-d2"),
                                                f"agree-{time.monotonic_ns()}@{REFUSED_DOMAIN}"])
    wait_until(lambda: not {"queued", "sending", "deferred"} & set(rows(ledger.srv, done)), 30, "the campaign to finish")
    assert sorted(rows(ledger.srv, done)) == ["failed", "sent", "sent"], rows(ledger.srv, done)
    assert_agree(client, session, ledger, done, "done", 2, 3, 1)
    page_row = client.page("/admin/campaigns", session).one(f"tr#campaign-{done}")
    assert not page_row.select("button"), "a finished campaign offers no pause or cancel"

    # Active: one message a minute, so one goes and two wait while the readers are asked.
    active = new_campaign(ledger, "agree-active", [unique_email(f"agree-a{i}") for i in range(1, 4)], "--rate", "1/m")
    wait_until(lambda: rows(ledger.srv, active).count("sent") == 1, 30, "the first message to go")
    assert_agree(client, session, ledger, active, "active", 1, 3, 0)
    # Its live rate (sent over the last minute) and ETA (what is left at that rate) agree too: one a minute, two left.
    listed = next(c for c in json.loads(run(ledger.cli, "campaigns", "list", "--format", "json",
                                            config=ledger.srv.config).stdout) if c["id"] == active)
    api_entry = next(c for c in admin_list(ledger.srv) if c["id"] == active)
    for entry in (listed, api_entry):
        assert entry["liveRate"] == 0.017 and entry["etaSeconds"] == 120, entry
    row = client.page("/admin/campaigns", session).one(f"tr#campaign-{active}")
    assert (row.one("td.rate").text, row.one("td.eta").text) == ("1.0/min", "2m"), row
    done_entry = next(c for c in admin_list(ledger.srv) if c["id"] == done)
    assert done_entry["etaSeconds"] is None, done_entry
    run(ledger.cli, "campaigns", "cancel", str(active), config=ledger.srv.config)


def test_the_campaign_list_answers_the_api_only_with_the_admin_token(console_server):
    url = f"{console_server.url}/admin/campaigns"
    wrong = requests.get(url, timeout=HTTP_TIMEOUT, allow_redirects=False,
                         headers={"Authorization": "Bearer not-the-token", "Accept": "application/json"})
    assert wrong.status_code == 401 and wrong.json()["error"]["status"] == "UNAUTHENTICATED", wrong.text[:300]
    # A browser without a session is sent to sign in, as before.
    browser = requests.get(url, timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert browser.status_code == 303 and browser.headers["Location"].endswith("/admin/sign-in"), browser.status_code
    # The token reads, and changes nothing: a POST with it is still the console's (a form with a CSRF token).
    post = requests.post(f"{url}/1/pause", timeout=HTTP_TIMEOUT, allow_redirects=False,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert post.status_code == 303 and post.headers["Location"].endswith("/admin/sign-in"), post.status_code

"""`accounts.owner: app`: the operator's app keeps its users; Herald dispatches, verifies,
consumes and records. The app redeems codes with admin `codes:redeem` (and looks without
consuming with `codes:inspect`); the action pages hand a verified code to the continue URL;
campaign reports and the audit count these redemptions like Herald's own."""

from __future__ import annotations

import json
import subprocess
from urllib.parse import parse_qs, urlsplit

import requests

from helpers import action_link, herald_env, parse_link, query
from http_support import ADMIN_PREFIX, ADMIN_TOKEN, CONTINUE, HTTP_TIMEOUT, assert_error, code_of, ok, unique_email

BROWSER = "AppBrowser/1.0"


def cli(srv, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(srv.binary), *args, "--config", str(srv.config)], cwd=srv.cwd, env=herald_env(), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )


def app_server(server, *args, **overrides):
    return server(*args, accounts={"owner": "app"}, **overrides)


def test_the_app_redeems_a_mailed_code_once_and_the_ledger_records_it(server):
    srv = app_server(server)
    email = unique_email("reset")
    ok(srv.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE))
    code = code_of(action_link(srv.mail_to(email)[0]["message"]))

    for prefix in ("/v1/", ADMIN_PREFIX):
        info = ok(srv.admin("codes:inspect", {"oobCode": code}, prefix=prefix))
        assert info["requestType"] == "PASSWORD_RESET" and info["email"] == email, info
        assert info["continueUrl"] == CONTINUE and "expiresAt" in info, info

    redeemed = ok(srv.admin("codes:redeem", {"oobCode": code, "ip": "203.0.113.9", "userAgent": BROWSER}))
    assert redeemed == {"requestType": "PASSWORD_RESET", "email": email, "continueUrl": CONTINUE}, redeemed
    assert_error(srv.admin("codes:redeem", {"oobCode": code}), "INVALID_OOB_CODE")
    assert_error(srv.admin("codes:inspect", {"oobCode": code}), "INVALID_OOB_CODE")

    events = [(e["kind"], e["ip"], e["user_agent"]) for e in srv.events() if e["kind"] == "redeemed"]
    assert events == [("redeemed", "203.0.113.9", BROWSER)], events
    audit = requests.get(f"{srv.url}/admin/audit", params={"email": email}, timeout=HTTP_TIMEOUT,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    rows = [json.loads(line) for line in audit.text.splitlines()]
    assert len(rows) == 1 and rows[0]["redeemedAt"] and rows[0]["redeemedIp"] == "203.0.113.9", rows


def test_redeem_and_inspect_are_admin_calls_and_only_for_app_owned_accounts(server):
    srv = app_server(server, "--no-worker")
    code = srv.oob("VERIFY_EMAIL", unique_email("verify"))["oobCode"]
    assert_error(srv.post("codes:redeem", {"oobCode": code}), "INSUFFICIENT_PERMISSION")
    assert_error(srv.post("codes:inspect", {"oobCode": code}), "INSUFFICIENT_PERMISSION")
    assert_error(srv.admin("codes:redeem", {}), "MISSING_OOB_CODE")
    assert_error(srv.admin("codes:redeem", {"oobCode": "not-a-code"}), "INVALID_OOB_CODE")
    assert_error(srv.admin("codes:redeem", {"oobCode": code, "extra": 1}), "INVALID_ARGUMENT")
    ok(srv.admin("codes:redeem", {"oobCode": code}))

    herald_owned = server("--no-worker")
    other = herald_owned.oob("EMAIL_SIGNIN", unique_email("signin"), continueUrl=CONTINUE, canHandleCodeInApp=True)["oobCode"]
    assert_error(herald_owned.admin("codes:redeem", {"oobCode": other}), "OPERATION_NOT_ALLOWED")
    ok(herald_owned.admin("codes:inspect", {"oobCode": other}))


def test_action_page_hands_the_verified_code_to_the_continue_url(server):
    srv = app_server(server, "--no-worker")
    link = srv.oob("VERIFY_EMAIL", unique_email("page"), continueUrl=CONTINUE)["oobLink"]
    page = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert page.status_code == 303, page.text
    target = urlsplit(page.headers["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == CONTINUE.split("?")[0]
    params = parse_qs(target.query)
    assert params["oobCode"] == [parse_link(link)["params"]["oobCode"]] and params["mode"] == ["verifyEmail"], params
    assert params["step"] == ["2"], "the continue URL's own parameters stay"
    assert [e["kind"] for e in srv.events()] == ["click"], "a page view never consumes"
    ok(srv.admin("codes:redeem", {"oobCode": params["oobCode"][0]}))
    used = requests.get(srv.local(link), timeout=HTTP_TIMEOUT, allow_redirects=False)
    assert used.status_code == 400 and "text/html" in used.headers["Content-Type"]

    bare = srv.oob("VERIFY_EMAIL", unique_email("bare"))["oobLink"]
    assert requests.get(srv.local(bare), timeout=HTTP_TIMEOUT, allow_redirects=False).status_code == 400


def test_campaign_reports_count_app_redemptions(server):
    srv = app_server(server, worker={"pollInterval": "50ms"})
    emails = [unique_email(f"member{i}") for i in range(3)]
    recipients = srv.cwd / "members.csv"
    recipients.write_text("email\n" + "".join(f"{e}\n" for e in emails), encoding="utf-8")
    created = cli(srv, "campaign", "create", "welcome", "--action", "verify-email", "--recipients", str(recipients),
                  "--continue-url", CONTINUE)
    assert created.returncode == 0 and "imported 3, rejected 0" in created.stdout, created.stdout + created.stderr
    codes = {e: code_of(action_link(srv.mail_to(e)[0]["message"])) for e in emails}
    info = ok(srv.admin("codes:redeem", {"oobCode": codes[emails[0]]}))
    campaign_id = query(srv.db_path, "SELECT id FROM campaigns")[0]["id"]
    assert info["campaignId"] == str(campaign_id), info
    report = json.loads(cli(srv, "campaign", "report", str(campaign_id), "--format", "json").stdout)
    assert (report["sent"], report["redeemed"]) == (3, 1), report

"""One rulebook behind every entry point: `herald send`, a campaign row and admin
`accounts:sendOobCode` refuse the same request with the same code; an app caller
under enumeration protection gets a silent success instead; and who owns the
accounts (`accounts.owner`) is a documented mode with both sides tested."""

from __future__ import annotations

import csv
import subprocess

from helpers import herald_env, query
from http_support import CONTINUE, assert_error, ok, unique_email

PASSWORD = "rulebook-password-1"


def cli(srv, *args: str) -> subprocess.CompletedProcess:
    """Runs `herald ARGS --config <the server's config>` in the server's directory."""
    return subprocess.run(
        [str(srv.binary), *args, "--config", str(srv.config)], cwd=srv.cwd, env=herald_env(), stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )


def error_line(result: subprocess.CompletedProcess, status: int = 1) -> str:
    """The one `error: …` line of a refused command, which exits with `status` (3 not found; docs/reference/cli.md)."""
    assert result.returncode == status, f"expected exit {status}, got {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


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


# --------------------------------------------------------------------------- accounts.owner: herald
def test_unknown_address_is_refused_alike_by_cli_campaign_and_admin_api(server):
    srv = server("--no-worker")
    nobody = unique_email("nobody")
    before = outbox_rows(srv)

    assert "EMAIL_NOT_FOUND" in error_line(cli(srv, "send", "reset-password", nobody), status=3)
    assert_error(srv.admin("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": nobody}), "EMAIL_NOT_FOUND")
    rejects = campaign_rejects(srv, "reset-password", [nobody], "resets")
    assert [(r["line"], r["reason"], r["content"]) for r in rejects] == [("2", "EMAIL_NOT_FOUND", nobody)], rejects
    assert outbox_rows(srv) == before, "a refused request must queue nothing"

    assert "USER_NOT_FOUND" in error_line(cli(srv, "send", "verify-email", nobody, "--continue-url", CONTINUE), status=3)
    assert_error(srv.admin("accounts:sendOobCode", {"requestType": "VERIFY_EMAIL", "email": nobody}), "USER_NOT_FOUND")
    rejects = campaign_rejects(srv, "verify-email", [nobody], "verifies")
    assert [r["reason"] for r in rejects] == ["USER_NOT_FOUND"], rejects
    assert outbox_rows(srv) == before


def test_app_caller_gets_a_silent_success_for_what_an_admin_is_refused(server):
    srv = server("--no-worker")
    nobody = unique_email("silent")
    body = ok(srv.send_oob("PASSWORD_RESET", nobody))
    assert body["email"] == nobody
    assert outbox_rows(srv) == 0


def test_known_accounts_pass_the_same_rules_everywhere(server):
    srv = server("--no-worker", policy={"cooldown": "0s"})
    ada, bob = unique_email("ada"), unique_email("bob")
    srv.sign_up(ada, PASSWORD)
    srv.sign_up(bob, PASSWORD)
    disabled = unique_email("disabled")
    ok(srv.admin("accounts", {"email": disabled, "password": PASSWORD, "disabled": True}))

    sent = cli(srv, "send", "reset-password", ada)
    assert sent.returncode == 0 and sent.stdout.strip().isdigit(), sent.stderr
    assert "USER_DISABLED" in error_line(cli(srv, "send", "reset-password", disabled))
    assert_error(srv.admin("accounts:sendOobCode", {"requestType": "PASSWORD_RESET", "email": disabled}), "USER_DISABLED")
    rejects = campaign_rejects(srv, "reset-password", [ada, bob, disabled, unique_email("ghost")], "mixed")
    assert sorted(r["reason"] for r in rejects) == ["EMAIL_NOT_FOUND", "USER_DISABLED"], rejects
    campaign_rows = query(srv.db_path, "SELECT recipient FROM outbox WHERE campaign_id IS NOT NULL ORDER BY id")
    assert [r["recipient"] for r in campaign_rows] == [ada, bob]


def test_bulk_send_checks_every_line_before_queueing_any(server):
    srv = server("--no-worker")
    ada = unique_email("bulk")
    srv.sign_up(ada, PASSWORD)
    recipients = srv.cwd / "bulk.txt"
    recipients.write_text(f"{ada}\n# comment\n{unique_email('ghost')}\n", encoding="utf-8")
    line = error_line(cli(srv, "send", "reset-password", "--recipients", str(recipients)), status=3)
    assert "EMAIL_NOT_FOUND" in line and f"{recipients}:3" in line, line
    assert outbox_rows(srv) == 0


# --------------------------------------------------------------------------- accounts.owner: app
def test_app_owned_accounts_send_anywhere_and_refuse_account_calls(server):
    srv = server(accounts={"owner": "app"})
    anyone = unique_email("anyone")
    ok(srv.send_oob("PASSWORD_RESET", anyone))
    srv.mail_to(anyone)
    sent = cli(srv, "send", "verify-email", unique_email("cli"), "--continue-url", CONTINUE)
    assert sent.returncode == 0, sent.stderr

    assert_error(srv.post("accounts:signUp", {"email": anyone, "password": PASSWORD}), "OPERATION_NOT_ALLOWED")
    assert_error(srv.sign_in(anyone, PASSWORD), "OPERATION_NOT_ALLOWED")
    assert "OPERATION_NOT_ALLOWED" in error_line(cli(srv, "accounts", "list"))
    assert "OPERATION_NOT_ALLOWED" in error_line(
        cli(srv, "campaign", "create", "all", "--action", "verify-email", "--from-accounts", "--continue-url", CONTINUE))
    assert query(srv.db_path, "SELECT COUNT(*) AS n FROM accounts")[0]["n"] == 0

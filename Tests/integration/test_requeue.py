"""Second chances: `herald messages retry` requeues failed and dead mail with a fresh attempt budget and a new
code once the relay is fixed, `herald messages cancel` stops queued mail before it goes; both are recorded
in the ledger, filter by state, campaign, address and time, have a dry run, and exist as admin API calls.
"""

from __future__ import annotations

import json

from helpers import action_link, db_path, ledger_key, parse_link, query, write_config, write_recipients


def codes(tmp_path, outbox_id: int) -> list:
    return query(db_path(tmp_path), "SELECT code_hash, superseded_at, expires_at FROM action_codes WHERE outbox_id = ? ORDER BY id",
                 (outbox_id,))


def states(tmp_path) -> dict:
    return {r["recipient"]: r["state"] for r in query(db_path(tmp_path), "SELECT recipient, state FROM outbox")}


def test_failed_mail_is_retried_with_a_new_code_once_the_relay_is_fixed(herald, start_capture, tmp_path):
    broken = start_capture(script=["rcpt=bad:550:5.1.1 relay misconfigured"])
    config = write_config(tmp_path, broken, worker={"maxAttempts": 1})
    recipients = write_recipients(tmp_path, ["bad1@example.com", "bad2@example.com", "good@example.com"])
    herald("send", "reset-password", "--recipients", str(recipients), config=config)
    herald.worker_until_empty(config)
    assert states(tmp_path) == {"bad1@example.com": "failed", "bad2@example.com": "failed", "good@example.com": "sent"}
    ids = {r["recipient"]: r["id"] for r in query(db_path(tmp_path), "SELECT id, recipient FROM outbox")}
    old = codes(tmp_path, ids["bad1@example.com"])
    assert len(old) == 1 and old[0]["superseded_at"] is None

    unnarrowed = herald("messages", "retry", "--dry-run", config=config, check=False)
    assert unnarrowed.returncode == 64 and "name a campaign, an email or a time" in unnarrowed.stderr, unnarrowed.stderr
    dry = herald("messages", "retry", "--all", "--dry-run", config=config)
    assert f"would have retried 2 message(s): {ids['bad1@example.com']}, {ids['bad2@example.com']}" in dry.stdout, dry.stdout
    assert states(tmp_path)["bad1@example.com"] == "failed", "a dry run changes nothing"
    only = herald("messages", "retry", "--email", "bad1@example.com", config=config)
    assert "retried 1 message(s)" in only.stdout
    assert states(tmp_path)["bad1@example.com"] == "queued" and states(tmp_path)["bad2@example.com"] == "failed"
    row = query(db_path(tmp_path), "SELECT attempts, last_reply FROM outbox WHERE id = ?", (ids["bad1@example.com"],))[0]
    assert row["attempts"] == 0 and row["last_reply"] == "retried by cli", row
    voided = codes(tmp_path, ids["bad1@example.com"])[0]
    assert voided["superseded_at"] is not None and voided["expires_at"] <= voided["superseded_at"], "the old code must die"
    events = query(db_path(tmp_path), "SELECT outbox_id, kind, actor FROM outbox_events")
    assert [(e["outbox_id"], e["kind"], e["actor"]) for e in events] == [(ids["bad1@example.com"], "retried", "cli")]

    fixed = start_capture()
    config = write_config(tmp_path, fixed, worker={"maxAttempts": 1})
    herald.worker_until_empty(config)
    assert states(tmp_path)["bad1@example.com"] == "sent"
    [mail] = fixed.messages()
    code = parse_link(action_link(mail["message"]))["params"]["oobCode"]
    latest = codes(tmp_path, ids["bad1@example.com"])
    assert len(latest) == 2 and bytes(latest[1]["code_hash"]) == ledger_key(code), \
        "the retried row must go out with a new code"
    assert bytes(latest[0]["code_hash"]) != bytes(latest[1]["code_hash"])


def test_retry_and_cancel_refuse_states_they_cannot_take_and_cancel_spares_other_rows(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    bad = herald("messages", "retry", "--state", "sent", config=config, check=False)
    assert bad.returncode == 64 and "cannot retry rows in state 'sent'" in bad.stderr, bad.stderr
    bad = herald("messages", "cancel", "--state", "failed", config=config, check=False)
    assert bad.returncode == 64 and "cannot cancel rows in state 'failed'" in bad.stderr, bad.stderr
    unknown = herald("messages", "retry", "--state", "lost", config=config, check=False)
    assert unknown.returncode == 64 and "unknown state 'lost'" in unknown.stderr

    (tmp_path / "news.csv").write_text("email\na@example.com\nb@example.com\n", encoding="utf-8")
    herald("campaign", "create", "news", "--action", "verify-email", "--recipients", str(tmp_path / "news.csv"), config=config)
    single = herald.send("reset-password", "a@example.com", config=config)
    campaign_id = query(db_path(tmp_path), "SELECT id FROM campaigns")[0]["id"]
    result = herald("messages", "cancel", "--campaign", str(campaign_id), config=config)
    assert "cancelled 2 message(s)" in result.stdout, result.stdout
    rows = {r["id"]: r for r in query(db_path(tmp_path), "SELECT id, state, last_reply FROM outbox")}
    assert rows[single]["state"] == "queued", "a cancel by campaign leaves single sends alone"
    assert {r["state"] for i, r in rows.items() if i != single} == {"cancelled"}
    assert all(r["last_reply"] == "cancelled by cli" for i, r in rows.items() if i != single)
    herald.worker_until_empty(config)
    assert [m["rcpt_tos"] for m in capture.messages()] == [["a@example.com"]]
    # The listing still works as before, with and without the list subcommand.
    assert {m["state"] for m in herald.messages(config)} == {"cancelled", "sent"}
    assert json.loads(herald("messages", "list", "--json", config=config).stdout)

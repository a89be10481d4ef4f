"""Message retention (`ledger.messageRetention`): a running worker prunes old finished mail in small steps, and what
the pruned rows answered survives them: the campaign's report, the refusal to import the campaign again."""

from __future__ import annotations

import gzip
import json
import re
import signal
import sqlite3

from helpers import db_path, query, wait_until, write_config

DAY_MS = 86_400_000


def age_everything(db) -> None:
    """As if every message was queued and sent, and every code made, 40 days ago."""
    with sqlite3.connect(db) as connection:
        connection.execute(
            "UPDATE outbox SET queued_at = queued_at - ?1, updated_at = updated_at - ?1, "
            "first_queued_at = first_queued_at - ?1, sent_at = sent_at - ?1", (40 * DAY_MS,))
        connection.execute("UPDATE action_codes SET created_at = created_at - ?1, expires_at = expires_at - ?1",
                           (40 * DAY_MS,))


def test_a_running_worker_prunes_old_finished_mail_and_the_campaign_report_survives(herald, start_capture, tmp_path):
    capture = start_capture()
    config = write_config(tmp_path, capture)
    emails = [f"member{i:02d}@x.test" for i in range(12)]
    recipients = tmp_path / "recipients.csv"
    recipients.write_text("email\n" + "".join(f"{e}\n" for e in emails), encoding="utf-8")
    created = herald("campaign", "create", "spring", "--action", "verify-email", "--recipients", str(recipients), config=config)
    campaign = int(re.search(r"\bcampaign (\d+)", created.stdout).group(1))
    herald.send("verify-email", "single@x.test", config=config)
    herald.worker_until_empty(config, timeout=120)
    report = herald("campaign", "report", str(campaign), "--format", "json", config=config).stdout
    assert json.loads(report)["counts"]["sent"] == len(emails), report
    listed = herald("campaigns", "list", "--format", "json", config=config).stdout

    # As if all of it was queued and sent 40 days ago; one message queued now stays (and ends the sweep).
    db = db_path(tmp_path)
    age_everything(db)
    audited = herald("audit", "--format", "jsonl", config=config).stdout.splitlines()
    fresh = herald.send("verify-email", "fresh@x.test", config=config)
    archive = tmp_path / "archive"
    kept = write_config(tmp_path, capture, name="kept.yaml",
                        ledger={"messageRetention": "30d", "archive": str(archive)},
                        worker={"heartbeatTimeout": "3s", "pollInterval": "100ms"})
    worker = herald.start("worker", config=kept, name="worker")
    try:
        wait_until(lambda: query(db, "SELECT COUNT(*) AS n FROM outbox")[0]["n"] == 1, timeout=60,
                   what="the old messages pruned")
    finally:
        worker.proc.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert [r["id"] for r in query(db, "SELECT id FROM outbox")] == [fresh]
    for table in ("action_codes", "delivery_attempts"):
        assert query(db, f"SELECT COUNT(*) AS n FROM {table} WHERE outbox_id <> ?", (fresh,))[0]["n"] == 0, table
    assert query(db, "SELECT COUNT(*) AS n FROM outbox_tombstones WHERE campaign_id = ?", (campaign,))[0]["n"] == len(emails)
    assert "pruned" in worker.stderr() or "pruned" in worker.stdout(), worker.stderr()

    # The archive holds each pruned message as the audit listed it: gzip JSON lines any gzip reader takes, and
    # `herald audit --archive` reads them back with the audit's filters, without a ledger.
    files = sorted(archive.glob("herald-archive-*.jsonl.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0], "rt", encoding="utf-8") as archived:
        lines = [json.loads(line) for line in archived]
    assert sorted(line["id"] for line in lines) == sorted(json.loads(line)["id"] for line in audited)
    assert fresh not in [line["id"] for line in lines]
    from_archive = herald("audit", "--archive", str(archive), "--format", "jsonl", config=None)
    assert sorted(from_archive.stdout.splitlines()) == sorted(audited), from_archive.stderr
    one = herald("audit", "--archive", str(archive), "--email", "member03@x.test", "--format", "jsonl", config=None).stdout
    assert [json.loads(line)["recipient"] for line in one.splitlines()] == ["member03@x.test"]
    of_campaign = herald("audit", "--archive", str(files[0]), "--campaign", str(campaign), "--format", "csv", config=None).stdout
    assert len(of_campaign.splitlines()) == 1 + len(emails), of_campaign
    for wrong, says in (([str(tmp_path / "nowhere")], "does not exist"), ([str(archive), "--sign-ins"], "links only")):
        refused = herald("audit", "--archive", *wrong, config=None, check=False)
        assert refused.returncode != 0 and says in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr

    # The campaign's report and its line in the list read as before.
    assert herald("campaign", "report", str(campaign), "--format", "json", config=config).stdout == report
    assert json.loads(herald("campaigns", "list", "--format", "json", config=config).stdout) == json.loads(listed)
    # Importing it again would mail everyone twice: refused with one line, and nothing is queued.
    again = herald("campaign", "create", "spring", "--action", "verify-email", "--recipients", str(recipients),
                   config=config, check=False)
    assert again.returncode != 0
    assert "pruned" in again.stderr and "choose another name" in again.stderr, again.stderr
    assert query(db, "SELECT COUNT(*) AS n FROM outbox")[0]["n"] == 1


def test_a_worker_whose_archive_cannot_be_made_does_not_start(herald, start_capture, tmp_path):
    capture = start_capture()
    plain = tmp_path / "plain"
    plain.write_text("not a directory", encoding="utf-8")
    config = write_config(tmp_path, capture, ledger={"messageRetention": "30d", "archive": str(plain / "archive")})
    refused = herald("worker", "--until-empty", config=config, check=False)
    assert refused.returncode != 0
    assert "ledger.archive" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_a_ledger_made_with_message_retention_on_can_give_space_back(herald, tmp_path):
    for retention, mode in (("0", 0), ("30d", 2)):
        folder = tmp_path / f"retention-{retention}"
        folder.mkdir()
        config = write_config(folder, ledger={"messageRetention": retention})
        herald("campaigns", "list", config=config)
        with sqlite3.connect(db_path(folder)) as connection:
            assert connection.execute("PRAGMA auto_vacuum").fetchone()[0] == mode, retention


def test_two_workers_on_one_ledger_archive_each_pruned_message_once(herald, start_capture, tmp_path):
    capture = start_capture()
    config = write_config(tmp_path, capture)
    emails = [f"pair{i:03d}@x.test" for i in range(300)]
    recipients = tmp_path / "recipients.csv"
    recipients.write_text("email\n" + "".join(f"{e}\n" for e in emails), encoding="utf-8")
    herald("campaign", "create", "pairs", "--action", "verify-email", "--recipients", str(recipients), config=config)
    herald.worker_until_empty(config, timeout=120)
    db = db_path(tmp_path)
    age_everything(db)
    archive = tmp_path / "archive"
    kept = write_config(tmp_path, capture, name="kept.yaml", ledger={"messageRetention": "30d", "archive": str(archive)},
                        worker={"heartbeatTimeout": "3s", "pollInterval": "100ms"})
    workers = [herald.start("worker", config=kept, name=f"worker{n}") for n in range(2)]
    try:
        wait_until(lambda: query(db, "SELECT COUNT(*) AS n FROM outbox")[0]["n"] == 0, timeout=60,
                   what="every message pruned")
    finally:
        for worker in workers:
            worker.proc.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.wait(timeout=30)
    files = sorted(archive.glob("herald-archive-*.jsonl.gz"))
    ids = []
    for file in files:
        with gzip.open(file, "rt", encoding="utf-8") as archived:
            ids += [json.loads(line)["id"] for line in archived]
    assert len(files) == 1, files
    assert len(ids) == len(emails) and len(set(ids)) == len(emails)

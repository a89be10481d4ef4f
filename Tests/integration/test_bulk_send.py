"""`herald send --recipients FILE` is idempotent per file and options: a re-run queues only what is missing.

A run that fails part-way (here a trigger on the ledger refuses rows after the first batches, as a full disk
would) says how many addresses are queued, and running the same command again queues exactly the rest.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

from helpers import (
    action_link, assert_one_error_line, by_recipient, parse_link, query, write_config, write_recipients,
)

CONTINUE = "https://app.example.com/welcome"


def addresses(count: int, prefix: str = "bulk") -> list:
    return [f"{prefix}{i:05d}@x.test" for i in range(count)]


def send_bulk(herald, config, path, *options, check: bool = True):
    return herald("send", "verify-email", "--recipients", path, "--continue-url", CONTINUE, *options,
                  config=config, check=check)


def outbox(db) -> list:
    return query(db, "SELECT recipient, (SELECT key FROM bulk_sends WHERE id = bulk_id) AS bulk_key, locale, due_at, "
                     "next_attempt_at FROM outbox ORDER BY id")


def test_sending_the_same_file_twice_queues_each_address_once(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    listed = addresses(30)
    # A repeated address (in another case), a comment and a blank line are not new recipients.
    path = write_recipients(tmp_path, listed + [listed[0].upper(), "# not an address", ""])

    first = send_bulk(herald, config, path)
    assert first.stdout.strip() == "queued 30 message(s)"
    again = send_bulk(herald, config, path)
    assert again.stdout.strip() == "queued 0 message(s); 30 already queued by an earlier run of this file"

    rows = outbox(db)
    assert sorted(row["recipient"] for row in rows) == listed
    assert len({row["bulk_key"] for row in rows}) == 1 and rows[0]["bulk_key"]
    assert all(row["due_at"] == row["next_attempt_at"] for row in rows)

    herald.worker_until_empty(config)
    received = by_recipient(capture.messages())
    assert sorted(received) == listed
    assert all(len(messages) == 1 for messages in received.values())
    link = parse_link(action_link(received[listed[0]][0]["message"]))
    assert link["params"]["mode"] == "verifyEmail"
    assert link["params"]["continueUrl"] == CONTINUE
    assert {m["state"] for m in herald.messages(config)} == {"sent"}


def test_other_options_make_another_bulk_send(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    path = write_recipients(tmp_path, addresses(5))
    send_bulk(herald, config, path)
    other = send_bulk(herald, config, path, "--locale", "pl")
    assert other.stdout.strip() == "queued 5 message(s)"
    rows = outbox(db)
    assert len(rows) == 10
    assert len({(row["bulk_key"], row["locale"]) for row in rows}) == 2


def test_a_run_failing_part_way_says_what_is_queued_and_a_rerun_queues_the_rest(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    herald("migrate", config=config)
    listed = addresses(3000)
    path = write_recipients(tmp_path, listed)
    # Bulk sends commit in batches of 1,000: the third batch fails at its 501st row and rolls back.
    with closing(sqlite3.connect(db)) as ledger:
        ledger.execute("""
            CREATE TRIGGER full_disk BEFORE INSERT ON outbox WHEN (SELECT COUNT(*) FROM outbox) >= 2500
            BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END""")
        ledger.commit()

    failed = send_bulk(herald, config, path, check=False)
    assert failed.returncode == 5  # the ledger is unavailable (a full disk)
    assert_one_error_line(
        failed, "database or disk is full",
        ": queued 2000 of 3000 before the failure; run the same command again to queue the rest "
        "(already queued addresses are skipped)")
    assert failed.stdout == ""
    assert sorted(row["recipient"] for row in outbox(db)) == listed[:2000]

    with closing(sqlite3.connect(db)) as ledger:
        ledger.execute("DROP TRIGGER full_disk")
        ledger.commit()
    rerun = send_bulk(herald, config, path)
    assert rerun.stdout.strip() == "queued 1000 message(s); 2000 already queued by an earlier run of this file"
    rows = outbox(db)
    assert sorted(row["recipient"] for row in rows) == listed
    assert len({row["bulk_key"] for row in rows}) == 1

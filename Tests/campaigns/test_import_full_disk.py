"""A campaign import that fills the disk (issue #44, item 6).

`herald campaign create NAME --action verify-email --recipients big.csv` on a SQLite ledger on a small tmpfs: the
import commits in batches (20,000 rows), so it fills the disk part-way and stops with one `error:` line that says how
many rows are committed and that running the same command again imports the rest. The count is the ledger's. Once
the tmpfs is grown (`mount -o remount,size=…`), the same command imports exactly the rest: imported + already
imported = the CSV's rows, each address once; a third run imports nothing.

Mounting needs root; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import re

import pytest

from helpers import assert_one_error_line, free_bytes, integrity_check, mount_tmpfs, query, remount_tmpfs, unmount
from campaign_support import addresses, campaign_config, create_campaign, run, write_recipients

ROWS = 60_000  # three import batches of 20,000 rows, about 30 MB of ledger with its WAL
SMALL = "20m"  # room for some batches, not all three (40,000 rows are committed here)
LARGE = "256m"
HELD = re.compile(
    r'campaign (\d+) "big" holds (\d+) rows committed before the failure: '
    r"run the same command again to import the rest \(rows already imported are skipped\)")


@pytest.fixture
def ledger_tmpfs(tmp_path):
    """A small tmpfs at tmp_path/ledger for the database, unmounted at the end. Request it before `herald`."""
    directory = mount_tmpfs(tmp_path / "ledger", size=SMALL)
    try:
        yield directory
    finally:
        unmount(directory)


def campaign_totals(db, campaign_id: int) -> dict:
    [totals] = query(db, "SELECT count(*) AS n, count(DISTINCT recipient) AS d FROM outbox WHERE campaign_id = ?",
                     (campaign_id,))
    return totals


def test_an_import_that_fills_the_disk_says_what_it_committed_and_the_same_command_imports_the_rest(
        ledger_tmpfs, herald, tmp_path):
    db = ledger_tmpfs / "herald.sqlite"
    config = campaign_config(tmp_path, database={"path": str(db)})
    emails = addresses("big", ROWS, "big.test")
    recipients = write_recipients(tmp_path / "big.csv", "email", emails)  # the CSV and its rejects: not on the tmpfs
    command = ("campaign", "create", "big", "--action", "verify-email", "--recipients", str(recipients))

    full = run(herald, *command, config=config, check=False, timeout=120)
    line = assert_one_error_line(full, "holds", "rows committed before the failure")
    assert free_bytes(ledger_tmpfs) < 1 << 20, f"the ledger's tmpfs did not fill up: {line}"
    match = HELD.search(line)
    assert match, f"the error line does not say how many rows are committed and how to resume:\n{line}"
    campaign_id, held = int(match.group(1)), int(match.group(2))
    [campaign] = query(db, "SELECT id FROM campaigns WHERE name = 'big'")
    assert campaign["id"] == campaign_id, (campaign, line)
    committed = campaign_totals(db, campaign_id)
    assert committed == {"n": held, "d": held}, f"the error line says {held} rows, the ledger holds {committed}"
    assert 0 < held < ROWS, f"the disk did not fill part-way through the import ({held} of {ROWS} rows committed)"
    print(f"{SMALL} tmpfs full after {held} of {ROWS} rows: {line}")

    remount_tmpfs(ledger_tmpfs, LARGE)
    rest = create_campaign(herald, config, "big", *command[3:], timeout=300)
    assert rest["id"] == campaign_id, rest["stdout"]
    assert (rest["imported"], rest["already"], rest["rejected"]) == (ROWS - held, held, 0), (
        f"{held} rows were committed; the same command must import exactly the other {ROWS - held}\n{rest['stdout']}")
    assert campaign_totals(db, campaign_id) == {"n": ROWS, "d": ROWS}
    stored = {row["recipient"] for row in query(db, "SELECT recipient FROM outbox WHERE campaign_id = ?", (campaign_id,))}
    assert stored == set(emails), "every address of the CSV, each once"

    again = create_campaign(herald, config, "big", *command[3:], timeout=300)
    assert (again["imported"], again["already"], again["rejected"]) == (0, ROWS, 0), again["stdout"]
    assert campaign_totals(db, campaign_id) == {"n": ROWS, "d": ROWS}
    assert integrity_check(db) == ["ok"]

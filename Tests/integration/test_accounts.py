"""`herald accounts import|list`: CSV and JSON lines, per-row errors, good rows never held back."""
from __future__ import annotations

import json
import sqlite3

from helpers import write_config


def test_csv_import_reports_bad_rows_by_line_and_keeps_the_good_ones(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = tmp_path / "users.csv"
    users.write_text(
        "email,password,displayName,emailVerified\n"
        "ada@example.com,secret123,Ada Lovelace,true\n"
        "not-an-address,secret123,Bad,false\n"
        '"grace@example.com",hunter22,"Hopper, Grace",false\n'
        "short@example.com,12345,Short,false\n"
        "ADA@example.com,another1,Duplicate,false\n"
        "too,many,columns,here,extra\n"
        "alan@example.com,,Alan,maybe\n"
        "linus@example.com,,,\n",
        encoding="utf-8",
    )
    result = herald("accounts", "import", str(users), config=config, check=False)
    assert result.returncode == 1
    assert "imported 3 account(s), rejected 5" in result.stdout
    rejected = [line for line in result.stderr.splitlines() if line.startswith(str(users))]
    assert [line.split(":")[1] for line in rejected] == ["3", "5", "6", "7", "8"]
    assert "INVALID_EMAIL" in rejected[0]
    assert "WEAK_PASSWORD" in rejected[1]
    assert "EMAIL_EXISTS" in rejected[2]
    assert "expected 4 columns, found 5" in rejected[3]
    assert "emailVerified must be true or false" in rejected[4]

    listed = json.loads(herald("accounts", "list", "--json", config=config).stdout)
    by_email = {row["email"]: row for row in listed}
    assert set(by_email) == {"ada@example.com", "grace@example.com", "linus@example.com"}
    assert by_email["ada@example.com"]["emailVerified"] is True
    assert by_email["grace@example.com"]["displayName"] == "Hopper, Grace"
    assert by_email["linus@example.com"]["hasPassword"] is False

    # Passwords are stored as salted hashes only.
    with sqlite3.connect(tmp_path / "herald.sqlite") as db:
        hashes = [row[0] for row in db.execute("SELECT password_hash FROM accounts WHERE password_hash IS NOT NULL")]
    assert len(hashes) == 2 and all(h.startswith("pbkdf2-sha256$") for h in hashes)
    assert not any("secret123" in h or "hunter22" in h for h in hashes)


def test_json_lines_import(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = tmp_path / "users.jsonl"
    users.write_text(
        json.dumps({"email": "ada@example.com", "password": "secret123", "uid": "ada-1"}) + "\n"
        + "{not json\n"
        + json.dumps({"email": "bob@example.com", "disabled": True}) + "\n",
        encoding="utf-8",
    )
    result = herald("accounts", "import", str(users), config=config, check=False)
    assert result.returncode == 1
    assert "imported 2 account(s), rejected 1" in result.stdout
    assert f"{users}:2:" in result.stderr
    listed = {row["uid"]: row for row in json.loads(herald("accounts", "list", "--json", config=config).stdout)}
    assert listed["ada-1"]["email"] == "ada@example.com"
    assert [row["disabled"] for row in listed.values() if row["email"] == "bob@example.com"] == [True]

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


def test_firebase_export_without_hash_parameters_is_one_clear_error(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": [{"localId": "u1", "email": "ada@example.com",
                                            "passwordHash": "aGFzaA==", "salt": "c2FsdA=="}]}), encoding="utf-8")
    result = herald("accounts", "import", str(users), config=config, check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: MISSING_HASH_ALGORITHM") and "--hash-config" in lines[0], result.stderr
    assert json.loads(herald("accounts", "list", "--json", config=config).stdout) == []


def test_firebase_export_imports_with_the_consoles_hash_config_and_a_rerun_skips(herald, tmp_path):
    import base64
    import hashlib

    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = []
    for index in range(3):
        salt = f"salt-{index}".encode()
        digest = hashlib.sha256(salt + f"password-{index}".encode()).digest()
        users.append({"localId": f"u{index}", "email": f"user{index}@example.com", "emailVerified": True,
                      "passwordHash": base64.b64encode(digest).decode(), "salt": base64.b64encode(salt).decode(),
                      "createdAt": "1600000000000", "lastSignedInAt": "1700000000000"})
    users.append({"localId": "bad", "email": "not-an-address"})
    export = tmp_path / "users.json"
    export.write_text('{"users": [\n' + ",\n".join(json.dumps(user, indent=2) for user in users) + "]}\n", encoding="utf-8")
    hash_config = tmp_path / "hash-config.txt"
    hash_config.write_text("hash_config {\n  algorithm: SHA256,\n  rounds: 1,\n}\n", encoding="utf-8")

    first = herald("accounts", "import", str(export), "--hash-config", str(hash_config), config=config, check=False)
    assert first.returncode == 1
    assert "imported 3 account(s), rejected 1, skipped 0 already there" in first.stdout, first.stdout
    assert f"{export}:4: localId bad: email is invalid" in first.stderr, first.stderr
    again = herald("accounts", "import", str(export), "--hash-config", str(hash_config), config=config, check=False)
    assert "imported 0 account(s), rejected 1, skipped 3 already there" in again.stdout, again.stdout

    with sqlite3.connect(tmp_path / "herald.sqlite") as db:
        rows = dict(db.execute("SELECT uid, password_hash FROM accounts"))
        created = db.execute("SELECT created_at FROM accounts WHERE uid = 'u0'").fetchone()[0]
    assert sorted(rows) == ["u0", "u1", "u2"] and all(h.startswith("firebase-sha256$1$") for h in rows.values())
    assert created == 1600000000000

    exported = tmp_path / "out.json"
    out = herald("accounts", "export", str(exported), config=config)
    assert "exported 3 account(s)" in out.stdout
    assert (exported.stat().st_mode & 0o777) == 0o600
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert document["hashConfig"] == {"hashAlgorithm": "PBKDF2_SHA256", "rounds": 210000}
    assert [user["localId"] for user in document["users"]] == ["u0", "u1", "u2"]
    assert all(user["heraldPasswordHash"].startswith("firebase-sha256$") for user in document["users"])


def test_a_rerun_of_a_csv_without_uids_skips_the_addresses_already_there(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = tmp_path / "users.csv"
    users.write_text("email,password\nada@example.com,secret123\ngrace@example.com,hunter22\n", encoding="utf-8")
    first = herald("accounts", "import", str(users), config=config)
    assert "imported 2 account(s), rejected 0, skipped 0 already there" in first.stdout, first.stdout
    users.write_text(users.read_text(encoding="utf-8") + "alan@example.com,turing12\n", encoding="utf-8")
    again = herald("accounts", "import", str(users), config=config)
    assert "imported 1 account(s), rejected 0, skipped 2 already there" in again.stdout, again.stdout
    assert len(json.loads(herald("accounts", "list", "--json", config=config).stdout)) == 3


def test_firebase_auth_import_options_describe_the_hashes(herald, tmp_path):
    import base64
    import hashlib
    import hmac

    config = write_config(tmp_path, accounts={"owner": "herald"})
    key, salt = b"project-hash-key", b"salt-1"
    digest = hmac.new(key, b"password-1" + salt, hashlib.sha256).digest()
    export = tmp_path / "users.json"
    export.write_text(json.dumps({"users": [{"localId": "h1", "email": "h1@example.com",
                                             "passwordHash": base64.b64encode(digest).decode(),
                                             "salt": base64.b64encode(salt).decode()}]}), encoding="utf-8")
    result = herald("accounts", "import", str(export), "--hash-algo", "HMAC_SHA256",
                    "--hash-key", base64.b64encode(key).decode(), "--hash-input-order", "PASSWORD_FIRST", config=config)
    assert "imported 1 account(s)" in result.stdout, result.stdout
    with sqlite3.connect(tmp_path / "herald.sqlite") as db:
        [(stored,)] = db.execute("SELECT password_hash FROM accounts WHERE uid = 'h1'").fetchall()
    assert stored.startswith("firebase-hmac-sha256$PASSWORD_AND_SALT$"), stored

    refused = herald("accounts", "import", str(export), "--hash-algo", "HMAC_SHA256", "--hash-input-order", "SIDEWAYS",
                     config=config, check=False)
    assert refused.returncode != 0 and "--hash-input-order must be SALT_FIRST or PASSWORD_FIRST" in refused.stderr


def test_list_streams_every_account_in_uid_order_past_a_page_and_stops_at_the_limit(herald, tmp_path):
    config = write_config(tmp_path, accounts={"owner": "herald"})
    users = tmp_path / "users.jsonl"
    uids = [f"u{n:05d}" for n in range(2345)]  # more than two pages of 1,000
    shuffled = uids[1::2] + uids[0::2]
    users.write_text("".join(json.dumps({"uid": uid, "email": f"{uid}@example.com"}) + "\n" for uid in shuffled),
                     encoding="utf-8")
    herald("accounts", "import", str(users), config=config)
    lines = herald("accounts", "list", "--format", "jsonl", config=config).stdout.splitlines()
    assert [json.loads(line)["uid"] for line in lines] == uids
    limited = herald("accounts", "list", "--format", "csv", "--limit", "1500", config=config).stdout.splitlines()
    assert limited[0].startswith("uid,") and [row.split(",")[0] for row in limited[1:]] == uids[:1500]
    refused = herald("accounts", "list", "--limit", "0", config=config, check=False)
    assert refused.returncode == 64 and "--limit" in refused.stderr

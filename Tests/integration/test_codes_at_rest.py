"""Action codes are stored only as their key and SHA-256: the 32 secret bytes never rest on disk."""

from __future__ import annotations

import base64
import hashlib

from helpers import action_link, database_files, ledger_key, parse_link, query, write_config

CONTINUE = "https://app.example.com/finish"


def test_database_holds_no_plaintext_code(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    herald.send("sign-in", "a@x.test", "--continue-url", CONTINUE, config=config)
    herald.send("verify-email", "b@x.test", config=config)
    herald.send("reset-password", "c@x.test", config=config)
    herald.send("verify-and-change-email", "d@x.test", "--new-email", "e@x.test", config=config)
    herald.worker_until_empty(config)

    codes = [parse_link(action_link(m["message"]))["params"]["oobCode"] for m in capture.messages()]
    assert len(codes) == 4

    files = database_files(db)
    assert files, f"no database at {db}"
    blob = b"".join(path.read_bytes() for path in files)
    for code in codes:
        assert code.encode("ascii") not in blob, f"plaintext code {code} in {[p.name for p in files]}"
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        assert len(raw) == 40, f"{code} is not an 8-byte key and 32 random bytes"
        assert raw[8:] not in blob, "the code's secret bytes are stored"

    hashes = {bytes(r["code_hash"]) for r in query(db, "SELECT code_hash FROM action_codes")}
    assert all(len(h) == 40 for h in hashes)
    for code in codes:
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        assert raw[:8] + hashlib.sha256(code.encode("ascii")).digest() in hashes, f"no key and hash stored for {code}"
        assert ledger_key(code) == raw[:8] + hashlib.sha256(code.encode("ascii")).digest()

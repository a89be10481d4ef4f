"""DKIM: every message Herald sends carries signatures that dkimpy verifies against the keys' published records.

The records come from `herald dkim keygen` and `herald dkim records` and are served to dkimpy by a dnsfunc, so no
DNS is involved; a changed header or body must fail the same check.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import dkim

from helpers import write_config

DOMAIN = "herald-demo.example"


def keygen(herald, tmp_path: Path, *options) -> str:
    """Runs `herald dkim keygen` and returns the record line it prints."""
    result = herald("dkim", "keygen", "--domain", DOMAIN, *options)
    records = [line for line in result.stdout.splitlines() if "._domainkey." in line]
    assert len(records) == 1, result.stdout
    return records[0]


def record_text(line: str) -> tuple[str, bytes]:
    """('<selector>._domainkey.<domain>.', the TXT strings joined) from a zone-file line."""
    name = line.split()[0]
    strings = re.findall(r'"([^"]*)"', line)
    assert all(len(s) <= 255 for s in strings), "a TXT string is over 255 characters"
    return name, "".join(strings).encode()


def dns_from(lines: list) -> callable:
    records = dict(record_text(line) for line in lines)

    def lookup(name, timeout=5):
        key = name.decode() if isinstance(name, bytes) else name
        return records.get(key if key.endswith(".") else key + ".")
    return lookup


def verifies(raw: bytes, index: int, lookup) -> bool:
    """dkimpy's verdict on signature `index`; a body-hash mismatch raises inside dkimpy and counts as a failure."""
    try:
        return dkim.DKIM(raw).verify(idx=index, dnsfunc=lookup)
    except dkim.DKIMException:
        return False


def signatures(raw: bytes) -> list:
    """The tags of each DKIM-Signature header, top first."""
    msg = raw.split(b"\r\n\r\n", 1)[0].decode()
    unfolded = re.sub(r"\r\n[ \t]", " ", msg)
    out = []
    for line in unfolded.split("\r\n"):
        if line.lower().startswith("dkim-signature:"):
            tags = {}
            for part in line.split(":", 1)[1].split(";"):
                if "=" in part:
                    key, value = part.split("=", 1)
                    tags[key.strip()] = re.sub(r"\s+", "", value)
            out.append(tags)
    return out


def signing_config(herald, tmp_path, capture, **extra):
    rsa_record = keygen(herald, tmp_path, "--out", str(tmp_path / "rsa.pem"))
    ed_record = keygen(herald, tmp_path, "--selector", "mail-ed", "--algorithm", "ed25519", "--out", str(tmp_path / "ed.pem"))
    config = write_config(
        tmp_path, capture,
        dkim={"domain": DOMAIN, "selector": "herald", "rsaKeyFile": str(tmp_path / "rsa.pem"),
              "ed25519KeyFile": str(tmp_path / "ed.pem"), "ed25519Selector": "mail-ed"},
        **extra)
    return config, [rsa_record, ed_record]


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_over_another(herald, tmp_path):
    line = keygen(herald, tmp_path, "--out", str(tmp_path / "k.pem"))
    name, text = record_text(line)
    assert name == f"herald._domainkey.{DOMAIN}."
    assert text.startswith(b"v=DKIM1; k=rsa; p=MII")
    mode = stat.S_IMODE(os.stat(tmp_path / "k.pem").st_mode)
    assert mode == 0o600
    before = (tmp_path / "k.pem").read_bytes()
    again = herald("dkim", "keygen", "--domain", DOMAIN, "--out", str(tmp_path / "k.pem"), check=False)
    assert again.returncode != 0 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert (tmp_path / "k.pem").read_bytes() == before
    bad = herald("dkim", "keygen", "--domain", DOMAIN, "--bits", "1024", "--out", str(tmp_path / "small.pem"), check=False)
    assert bad.returncode != 0 and "2048" in bad.stderr and not (tmp_path / "small.pem").exists()


def test_every_message_carries_an_rsa_and_an_ed25519_signature_that_dkimpy_verifies(herald, capture, tmp_path):
    config, records = signing_config(
        herald, tmp_path, capture, campaigns={"unsubscribeUrl": "https://app.example.com/unsubscribe"})
    published = herald("dkim", "records", config=config).stdout.strip().splitlines()
    assert sorted(published) == sorted(records)
    lookup = dns_from(records)

    herald.send("verify-email", "ada@example.com", "--display-name", "Zoë Łukasiewicz", config=config)
    herald.send("sign-in", "bob@example.com", "--locale", "fa", "--continue-url", "https://app.example.com/done", config=config)
    herald.send("reset-password", "carol@example.com", "--locale", "de", config=config)
    (tmp_path / "news.csv").write_text("email,display_name\ndan@example.com,Dan\n")
    herald("campaign", "create", "news", "--action", "verify-email", "--recipients", str(tmp_path / "news.csv"), config=config)
    herald.worker_until_empty(config)
    messages = capture.wait_for_messages(4)

    for item in messages:
        raw = item["raw"]
        tags = signatures(raw)
        assert [t["a"] for t in tags] == ["rsa-sha256", "ed25519-sha256"]
        for index, t in enumerate(tags):
            assert (t["c"], t["d"], t["v"]) == ("relaxed/relaxed", DOMAIN, "1")
            signed = t["h"].lower().split(":")
            for header in ("from", "to", "subject", "date", "message-id", "mime-version", "content-type"):
                assert header in signed, f"{header} not signed: {t['h']}"
            assert signed.count("from") == 2  # over-signed: a From added in transit breaks it
            assert dkim.DKIM(raw).verify(idx=index, dnsfunc=lookup), f"signature {index} ({t['a']}) does not verify"
        if item["message"]["List-Unsubscribe"]:
            assert {"list-unsubscribe", "list-unsubscribe-post"} <= set(tags[0]["h"].lower().split(":"))
    assert any(item["message"]["List-Unsubscribe"] for item in messages), "the campaign message has no List-Unsubscribe"


def test_a_changed_header_or_body_fails_verification(herald, capture, tmp_path):
    config, records = signing_config(herald, tmp_path, capture)
    lookup = dns_from(records)
    herald.send("verify-email", "ada@example.com", config=config)
    herald.worker_until_empty(config)
    raw = capture.wait_for_messages(1)[0]["raw"]
    assert dkim.DKIM(raw).verify(idx=0, dnsfunc=lookup) and dkim.DKIM(raw).verify(idx=1, dnsfunc=lookup)

    subject = re.search(rb"\r\nSubject: [^\r]*", raw).group(0)
    changed_subject = raw.replace(subject, subject + b" (forwarded)")
    oob = re.search(rb"oobCode=3D[A-Za-z0-9_-]{4}", raw).group(0)
    changed_body = raw.replace(oob, oob[:-1] + (b"A" if oob[-1:] != b"A" else b"B"))
    second_from = raw.replace(b"\r\nFrom: ", b"\r\nFrom: evil@attacker.example\r\nFrom: ", 1)
    for tampered in (changed_subject, changed_body, second_from):
        assert tampered != raw
        assert not verifies(tampered, 0, lookup)
        assert not verifies(tampered, 1, lookup)
    # Relaxed canonicalization: re-folding and extra spaces in transit keep it valid.
    refolded = raw.replace(subject, subject.replace(b": ", b":   ", 1))
    assert refolded != raw and verifies(refolded, 0, lookup) and verifies(refolded, 1, lookup)


def test_unsigned_mail_when_dkim_is_off(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    herald.send("verify-email", "ada@example.com", config=config)
    herald.worker_until_empty(config)
    assert b"DKIM-Signature" not in capture.wait_for_messages(1)[0]["raw"]
    off = herald("dkim", "records", config=config, check=False)
    assert off.returncode != 0 and "dkim.domain" in off.stderr


def test_bad_dkim_settings_stop_with_one_line_naming_the_setting(herald, capture, tmp_path):
    keygen(herald, tmp_path, "--out", str(tmp_path / "rsa.pem"))
    keygen(herald, tmp_path, "--algorithm", "ed25519", "--selector", "ed", "--out", str(tmp_path / "ed.pem"))
    (tmp_path / "junk.pem").write_text("not a key\n")
    cases = [
        ({"domain": DOMAIN}, "dkim.rsaKeyFile"),
        ({"domain": "other.example", "rsaKeyFile": str(tmp_path / "rsa.pem")}, "dkim.domain"),
        ({"domain": DOMAIN, "rsaKeyFile": str(tmp_path / "missing.pem")}, "dkim.rsaKeyFile"),
        ({"domain": DOMAIN, "rsaKeyFile": str(tmp_path / "ed.pem")}, "ed.pem"),
        ({"domain": DOMAIN, "rsaKeyFile": str(tmp_path / "junk.pem")}, "junk.pem"),
        ({"domain": DOMAIN, "rsaKeyFile": str(tmp_path / "rsa.pem"), "ed25519KeyFile": str(tmp_path / "rsa.pem"),
          "ed25519Selector": "ed"}, "rsa.pem"),
        ({"domain": DOMAIN, "rsaKeyFile": str(tmp_path / "rsa.pem"), "ed25519KeyFile": str(tmp_path / "ed.pem"),
          "ed25519Selector": "herald"}, "dkim.ed25519Selector"),
        ({"domain": DOMAIN, "selector": "bad selector", "rsaKeyFile": str(tmp_path / "rsa.pem")}, "dkim.selector"),
    ]
    for index, (settings, named) in enumerate(cases):
        config = write_config(tmp_path, capture, name=f"bad{index}.yaml", dkim=settings)
        result = herald("worker", "--until-empty", config=config, check=False)
        assert result.returncode != 0, settings
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], (settings, result.stderr)
    assert capture.messages() == []


def test_signed_mail_rendered_ahead_on_many_connections_carries_each_rows_own_code(herald, capture, tmp_path):
    """Signed mail is rendered beside the send loop; every message must still go to its row's address with
    that row's code, and verify."""
    from helpers import action_link, db_path, ledger_key, parse_link, query, write_recipients

    config, records = signing_config(herald, tmp_path, capture, smtp={"connections": 3})
    lookup = dns_from(records)
    addresses = [f"user{i}@example.com" for i in range(60)]
    herald("send", "verify-email", "--recipients", str(write_recipients(tmp_path, addresses)), config=config)
    herald.worker_until_empty(config)
    messages = capture.wait_for_messages(60)
    owners = {bytes(r["code_hash"]): r["recipient"] for r in query(
        db_path(tmp_path), "SELECT c.code_hash, o.recipient FROM action_codes c JOIN outbox o ON o.id = c.outbox_id")}
    seen = set()
    for item in messages:
        [rcpt] = item["rcpt_tos"]
        assert item["message"]["To"].addresses[0].addr_spec == rcpt
        code = parse_link(action_link(item["message"]))["params"]["oobCode"]
        assert owners[ledger_key(code)] == rcpt, f"{rcpt} got another row's code"
        assert dkim.DKIM(item["raw"]).verify(idx=0, dnsfunc=lookup), f"{rcpt}: the RSA signature does not verify"
        seen.add(rcpt)
    assert seen == set(addresses)

"""One CLI: every listing takes `--format table|json|jsonl|csv` (and `--json`), `--since`/`--until` read ISO times
and how long ago the same way everywhere and refuse the future, `herald messages` streams with `--limit`,
`--campaign`, `--since` and `--until`, `campaigns` is plural (`campaign` kept), every option has help, and the
exit status tells bad input (64), not found (3) and an unavailable ledger (5) apart.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from helpers import WriteLock, assert_one_error_line, db_path, query, write_config, write_recipients

USAGE, NOT_FOUND, UNAVAILABLE = 64, 3, 5


def ledger_with_mail(herald, tmp_path, capture=None):
    config = write_config(tmp_path, capture)
    recipients = write_recipients(tmp_path, ["ada@example.com", "bob@example.com", "cy@example.com"])
    herald("send", "reset-password", "--recipients", str(recipients), config=config)
    (tmp_path / "news.csv").write_text("email\ndee@example.com\neve@example.com\n")
    herald("campaigns", "create", "news", "--action", "verify-email", "--recipients", str(tmp_path / "news.csv"), config=config)
    herald("suppressions", "add", "gone@example.com", config=config)
    return config


LISTINGS = [
    ("messages",), ("campaigns", "list"), ("accounts", "list"), ("suppressions", "list"), ("throttles",), ("keys", "list"),
    ("webhooks", "list"), ("audit",),
]


@pytest.mark.parametrize("command", LISTINGS, ids=lambda c: " ".join(c))
def test_every_listing_prints_the_same_four_formats(herald, tmp_path, command):
    config = ledger_with_mail(herald, tmp_path)
    if command[0] == "accounts":  # Herald lists the accounts it owns
        config = write_config(tmp_path, name="owned.yaml", accounts={"owner": "herald"})
    array = json.loads(herald(*command, "--format", "json", config=config).stdout)
    assert isinstance(array, list)
    assert json.loads(herald(*command, "--json", config=config).stdout) == array, "--json is --format json"
    lines = [json.loads(line) for line in herald(*command, "--format", "jsonl", config=config).stdout.splitlines()]
    assert lines == array
    rows = list(csv.reader(io.StringIO(herald(*command, "--format", "csv", config=config).stdout)))
    assert len(rows) == len(array) + 1 and all(len(row) == len(rows[0]) for row in rows), rows
    assert herald(*command, "--format", "table", config=config).returncode == 0
    refused = herald(*command, "--format", "yaml", config=config, check=False)
    assert refused.returncode == USAGE and "yaml" in refused.stderr


def test_suppressions_json_is_an_array_like_every_other_listing(herald, tmp_path):
    config = ledger_with_mail(herald, tmp_path)
    listed = json.loads(herald("suppressions", "list", "--json", config=config).stdout)
    assert [entry["email"] for entry in listed] == ["gone@example.com"]


def test_messages_filter_by_campaign_time_and_limit(herald, tmp_path):
    config = ledger_with_mail(herald, tmp_path)
    campaign = json.loads(herald("campaigns", "list", "--json", config=config).stdout)[0]["id"]
    rows = lambda *options: json.loads(herald("messages", *options, "--json", config=config).stdout)
    assert len(rows()) == 5
    assert [row["recipient"] for row in rows("--limit", "2")] == ["ada@example.com", "bob@example.com"]
    assert {row["recipient"] for row in rows("--campaign", str(campaign))} == {"dee@example.com", "eve@example.com"}
    assert len(rows("--since", "1h")) == 5 and len(rows("--since", "2000-01-01T00:00:00Z")) == 5
    assert rows("--until", "1h") == [] and rows("--until", "2000-01-01T00:00:00Z") == []
    assert [row["action"] for row in rows("--action", "verify-email")] == ["verify-email", "verify-email"]
    table = herald("messages", "--limit", "1", config=config).stdout.splitlines()
    assert table[0].startswith("ID") and "ada@example.com" in table[1] and table[-1] == "1 message(s)"


def test_messages_stream_past_the_table_look_ahead(herald, tmp_path):
    config = write_config(tmp_path)
    recipients = write_recipients(tmp_path, [f"user{n}@example.com" for n in range(1500)])
    herald("send", "reset-password", "--recipients", str(recipients), config=config, timeout=120)
    table = herald("messages", config=config).stdout.splitlines()
    assert len(table) == 1502 and table[0].startswith("ID") and table[-1] == "1500 message(s)"
    assert len(json.loads(herald("messages", "--json", config=config).stdout)) == 1500


@pytest.mark.parametrize("command", [("messages",), ("audit",), ("messages", "retry", "--dry-run"), ("webhooks", "replay")],
                         ids=lambda c: " ".join(c))
def test_since_reads_durations_and_refuses_the_future_everywhere(herald, tmp_path, command):
    config = ledger_with_mail(herald, tmp_path)
    for since in ("90s", "10m", "1h", "2d", "now", "2026-01-01T00:00:00Z"):
        herald(*command, "--since", since, config=config)
    future = herald(*command, "--since", "+10m", config=config, check=False)
    assert_one_error_line(future, "--since")
    assert future.returncode == USAGE
    later = herald(*command, "--since", "2999-01-01T00:00:00Z", config=config, check=False)
    assert_one_error_line(later, "in the future")


def test_campaigns_is_plural_and_campaign_still_works(herald, tmp_path):
    config = ledger_with_mail(herald, tmp_path)
    assert herald("campaigns", "list", config=config).stdout == herald("campaign", "list", config=config).stdout
    assert "campaigns" in herald("--help", config=None).stdout


def test_removing_an_unsuppressed_address_is_one_error_and_not_found(herald, tmp_path):
    config = ledger_with_mail(herald, tmp_path)
    result = herald("suppressions", "remove", "nobody@example.com", config=config, check=False)
    assert_one_error_line(result, "nobody@example.com")
    assert result.returncode == NOT_FOUND and result.stdout == "", result.stdout
    assert herald("suppressions", "remove", "gone@example.com", config=config).stdout.strip() == "removed 1 address(es)"


def test_exit_codes_tell_usage_not_found_and_unavailable_apart(herald, tmp_path):
    config = ledger_with_mail(herald, tmp_path)
    assert herald("messages", "--no-such-option", config=config, check=False).returncode == USAGE
    assert herald("messages", "--state", "lost", config=config, check=False).returncode == USAGE
    assert herald("campaigns", "pause", "999", config=config, check=False).returncode == NOT_FOUND
    locked = write_config(tmp_path, database={"busyTimeout": "1s"})
    with WriteLock(db_path(tmp_path)):
        busy = herald("suppressions", "add", "late@example.com", config=locked, check=False, timeout=60)
    assert busy.returncode == UNAVAILABLE, busy.stderr


def help_entries(text):
    """(entry, has help) for every argument and option a --help lists."""
    entries, lines = [], text.splitlines()
    section = None
    for index, line in enumerate(lines):
        if re.match(r"^[A-Z][A-Z ]*:$", line):
            section = line
            continue
        if section in ("ARGUMENTS:", "OPTIONS:") and re.match(r"^  [-<]", line):
            following = lines[index + 1] if index + 1 < len(lines) else ""
            described = bool(re.search(r"\S {2,}\S", line.strip())) or bool(re.match(r"^ {6,}\S", following))
            entries.append((line.strip(), described))
    return entries


def test_every_option_and_argument_has_help(herald, tmp_path):
    pending, missing = [[]], []
    while pending:
        command = pending.pop()
        text = herald(*command, "--help", config=None).stdout
        missing += [" ".join(command) + ": " + entry for entry, described in help_entries(text) if not described]
        listed = text.split("SUBCOMMANDS:\n", 1)
        if len(listed) == 2:
            pending += [command + [name] for name in re.findall(r"^  ([a-z][a-z-]*)(?: \(default\))?\s", listed[1], re.M)]
    assert missing == []

"""`herald campaign create`: CSV import with per-line rejects, resuming an interrupted
import without duplicates, refused invocations, columns reaching the templates."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
import time

import pytest

from helpers import REPO_ROOT, query, table_exists, text_part
from campaign_support import (
    STATES, addresses, assert_cli_error, campaign_config, campaign_entry, campaign_rows, create_campaign, nonzero,
    nothing_written, parse_summary, recipients_in_order, run, write_recipients,
)

LONG_EMAIL = "a" * 60 + "@" + ".".join(["b" * 60] * 3) + ".example.com"  # 255 characters


def read_rejects(path) -> list:
    """The rejects file as a list of rows, header included."""
    assert path.exists(), f"no rejects file at {path}"
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")))


def test_mixed_rows_queue_the_good_ones_and_reject_each_bad_one_with_its_line_and_reason(herald, tmp_path, db):
    config = campaign_config(tmp_path)
    lines = [
        b"ada@example.com,Ada Lovelace,en,gold",                          # 2 good
        b"not-an-address,Nobody,en,gold",                                 # 3 invalid address
        b'grace@example.com,"Hopper, Grace",de,silver',                   # 4 good (quoted comma)
        b"ADA@Example.com,Ada Again,en,gold",                             # 5 duplicate (addresses are case-blind)
        b"linus@example.com," + b"N" * 257 + b",en,gold",                 # 6 display_name > 256
        b"alan@example.com,Alan Turing",                                  # 7 too few columns
        b"ken@example.com,Ken \xff Thompson,en,bronze",                   # 8 invalid UTF-8
        b"barbara@example.com,Barbara Liskov,en,gold,extra",              # 9 too many columns
        b"dennis@example.com,Dennis Ritchie,xx_!!,gold",                  # 10 invalid locale
        LONG_EMAIL.encode() + b",Long Address,en,gold",                   # 11 email > 254
        b"edsger@example.com,Edsger Dijkstra,en," + b"p" * 1001,          # 12 other field > 1000
        b"margaret@example.com,,,",                                       # 13 good, optional cells empty
        b"katherine@example.com,Katherine Johnson,pl-PL,platinum",        # 14 good
    ]
    recipients = write_recipients(tmp_path / "spring.csv", "email,display_name,locale,plan", lines)

    summary = create_campaign(herald, config, "spring", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (4, 9), summary["stdout"]
    assert summary["already"] in (None, 0), summary["stdout"]

    expected = [
        ["line", "reason", "content"],
        ["3", "invalid address", "not-an-address,Nobody,en,gold"],
        ["5", "duplicate in campaign", "ADA@Example.com,Ada Again,en,gold"],
        ["6", "field too long: display_name", lines[4].decode()],
        ["7", "wrong column count: expected 4, found 2", "alan@example.com,Alan Turing"],
        ["8", "invalid UTF-8", "ken@example.com,Ken \ufffd Thompson,en,bronze"],
        ["9", "wrong column count: expected 4, found 5", "barbara@example.com,Barbara Liskov,en,gold,extra"],
        ["10", "invalid locale", "dennis@example.com,Dennis Ritchie,xx_!!,gold"],
        ["11", "field too long: email", lines[9].decode()],
        ["12", "field too long: plan", lines[10].decode()],
    ]
    rejects = read_rejects(tmp_path / "spring.csv.rejects.csv")
    assert rejects[0] == expected[0], f"rejects header must be line,reason,content: {rejects[0]}"
    for want, got in zip(expected[1:], rejects[1:]):
        assert got == want, f"rejects row for line {want[0]}:\n got  {got!r}\n want {want!r}"
    assert len(rejects) == len(expected), f"{len(rejects) - 1} reject rows, expected {len(expected) - 1}:\n{rejects}"

    rows = {row["recipient"]: row for row in campaign_rows(db, summary["id"])}
    assert set(rows) == {"ada@example.com", "grace@example.com", "margaret@example.com", "katherine@example.com"}
    assert {row["state"] for row in rows.values()} == {"queued"}
    assert {row["action"] for row in rows.values()} == {"verify-email"}
    assert rows["grace@example.com"]["display_name"] == "Hopper, Grace"
    assert rows["grace@example.com"]["locale"] == "de"
    assert rows["katherine@example.com"]["locale"] == "pl-PL"
    assert rows["margaret@example.com"]["display_name"] in (None, "")
    assert json.loads(rows["ada@example.com"]["variables"]).get("plan") == "gold", rows["ada@example.com"]["variables"]
    assert json.loads(rows["katherine@example.com"]["variables"]).get("plan") == "platinum"

    listed = {m["recipient"]: m for m in herald.messages(config)}
    assert set(listed) == set(rows) and {m["state"] for m in listed.values()} == {"queued"}

    entry = campaign_entry(herald, config, summary["id"])
    assert (entry["name"], entry["action"], entry["state"]) == ("spring", "verify-email", "active")
    assert (entry["imported"], entry["rejected"]) == (4, 9)
    assert nonzero(entry["counts"]) == {"queued": 4}
    assert set(entry["counts"]) == set(STATES)


def test_rerunning_an_interrupted_import_adds_only_the_missing_rows(herald, capture, tmp_path, db):
    """The first run saw only part of the file (as if cut short), the second the whole
    file: nothing is imported or sent twice and old rejects are not re-listed."""
    config = campaign_config(tmp_path, capture)
    emails = addresses("resume", 30)
    rows = [f"{e},Resume {i}" for i, e in enumerate(emails, 1)]
    rows.insert(8, "broken-address,Broken")  # physical line 10
    recipients = tmp_path / "resume.csv"
    rejects = tmp_path / "resume-rejects.csv"
    command = ("--action", "verify-email", "--recipients", str(recipients), "--rejects", str(rejects))

    write_recipients(recipients, "email,display_name", rows[:14])  # lines 1-15: 13 good, 1 bad
    first = create_campaign(herald, config, "resume", *command)
    assert (first["imported"], first["rejected"]) == (13, 1), first["stdout"]
    herald.worker_until_empty(config)
    assert sorted(recipients_in_order(capture)) == emails[:13]

    write_recipients(recipients, "email,display_name", rows)
    second = create_campaign(herald, config, "resume", *command)
    assert second["id"] == first["id"], "re-running for the same NAME must resume that campaign"
    assert (second["imported"], second["already"], second["rejected"]) == (17, 13, 1), second["stdout"]
    assert read_rejects(rejects)[1:] == [["10", "invalid address", "broken-address,Broken"]]

    third = create_campaign(herald, config, "resume", *command)
    assert (third["imported"], third["already"], third["rejected"]) == (0, 30, 1), third["stdout"]

    stored = campaign_rows(db, first["id"])
    assert sorted(r["recipient"] for r in stored) == emails, "every recipient exactly once"
    herald.worker_until_empty(config)
    assert sorted(recipients_in_order(capture)) == emails, "every recipient mailed exactly once"
    entry = campaign_entry(herald, config, first["id"])
    assert entry["imported"] == 30 and nonzero(entry["counts"]) == {"sent": 30}
    assert len([r for r in herald.messages(config) if r["recipient"].startswith("resume")]) == 30


def _queued_rows(db) -> int:
    try:
        return query(db, "SELECT count(*) AS n FROM outbox")[0]["n"] if table_exists(db, "outbox") else 0
    except sqlite3.DatabaseError:  # the snapshot caught a write half-way; look again
        return 0


def test_an_import_killed_midway_resumes_without_duplicates(herald, tmp_path, db):
    config = campaign_config(tmp_path)
    n = 100_000
    emails = addresses("bulk", n, "bulk.test")
    recipients = write_recipients(tmp_path / "bulk.csv", "email", emails)
    options = ("--action", "verify-email", "--recipients", str(recipients))

    importer = herald.start("campaign", "create", "bulk", *options, config=config, name="import")
    deadline = time.monotonic() + 120
    while importer.proc.poll() is None and time.monotonic() < deadline and _queued_rows(db) == 0:
        time.sleep(0.05)
    running = importer.proc.poll() is None
    importer.kill()  # SIGKILL: no chance to tidy up
    kept = _queued_rows(db)
    assert running and 0 < kept < n, (
        f"the import was not caught half-way (still running: {running}, rows committed: {kept} of {n}); "
        f"stdout:\n{importer.stdout()}\nstderr:\n{importer.stderr()}")

    summary = create_campaign(herald, config, "bulk", *options, timeout=300)
    assert summary["rejected"] == 0, summary["stdout"]
    assert (summary["already"], summary["imported"]) == (kept, n - kept), summary["stdout"]
    [totals] = query(db, "SELECT count(*) AS n, count(DISTINCT recipient) AS d FROM outbox WHERE campaign_id = ?",
                     (summary["id"],))
    assert totals == {"n": n, "d": n}, f"expected {n} distinct rows, ledger has {totals}"


@pytest.mark.parametrize("case", ["missing file", "unreadable file", "unknown action", "bad rate word",
                                  "negative rate", "no email column"])
def test_refused_invocations_write_nothing(herald, tmp_path, db, case):
    config = campaign_config(tmp_path)
    good = write_recipients(tmp_path / "good.csv", "email", ["one@x.test", "two@x.test"])
    (tmp_path / "folder.csv").mkdir()
    no_email = write_recipients(tmp_path / "no-email.csv", "address,display_name", ["one@x.test,One"])
    options, needle = {
        "missing file": (["--action", "verify-email", "--recipients", str(tmp_path / "absent.csv")], "absent.csv"),
        "unreadable file": (["--action", "verify-email", "--recipients", str(tmp_path / "folder.csv")], "folder.csv"),
        "unknown action": (["--action", "launch-rockets", "--recipients", str(good)], "launch-rockets"),
        "bad rate word": (["--action", "verify-email", "--recipients", str(good), "--rate", "fast"], "fast"),
        "negative rate": (["--action", "verify-email", "--recipients", str(good), "--rate=-5/s"], "-5/s"),
        "no email column": (["--action", "verify-email", "--recipients", str(no_email)], "email"),
    }[case]
    args = ("campaign", "create", "refused", *options)
    result = run(herald, *args, config=config, check=False)
    assert_cli_error(args, result, needle, status=64)  # bad input
    nothing_written(db)
    leftovers = sorted(p.name for p in tmp_path.glob("*.rejects.csv"))
    assert leftovers == [], f"a refused import wrote rejects files: {leftovers}"


def test_extra_columns_display_name_and_locale_reach_the_template(herald, capture, tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(REPO_ROOT / "templates", templates)
    for locale in ("en", "de"):
        body = templates / "verify-email" / locale / "body.txt.mustache"
        body.write_text(body.read_text(encoding="utf-8").rstrip("\n") + "\nPlan: {{plan}} / Team: {{team}}\n",
                        encoding="utf-8")
    config = campaign_config(tmp_path, capture, templates={"directory": str(templates)})
    recipients = write_recipients(tmp_path / "vars.csv", "email,display_name,locale,plan,team", [
        "ada@example.com,Ada Lovelace,en,gold,Analytical Engines",
        "jurgen@example.com,Jürgen Müller,de,silver,Zürich & Co",
    ])
    summary = create_campaign(herald, config, "vars", "--action", "verify-email", "--recipients", str(recipients))
    assert summary["imported"] == 2, summary["stdout"]
    herald.worker_until_empty(config)

    mails = {m["rcpt_tos"][0]: m["message"] for m in capture.messages()}
    assert set(mails) == {"ada@example.com", "jurgen@example.com"}
    ada, jurgen = text_part(mails["ada@example.com"]), text_part(mails["jurgen@example.com"])
    assert "Hello Ada Lovelace," in ada and "Plan: gold / Team: Analytical Engines" in ada, ada
    assert "Hallo Jürgen Müller," in jurgen and "Plan: silver / Team: Zürich & Co" in jurgen, jurgen
    assert "bestätigen" in str(mails["jurgen@example.com"]["Subject"]), "the locale column picks the template"


def test_summary_line_names_the_rejects_file(herald, tmp_path):
    config = campaign_config(tmp_path)
    recipients = write_recipients(tmp_path / "small.csv", "email", ["ok@x.test", "nope"])
    result = run(herald, "campaign", "create", "small", "--action", "sign-in", "--recipients", str(recipients),
                 "--continue-url", "https://app.example.com/finish", config=config)
    summary = parse_summary(result.stdout)
    assert (summary["imported"], summary["rejected"]) == (1, 1), result.stdout
    assert str(tmp_path / "small.csv.rejects.csv") in result.stdout, "the summary should say where the rejects are"


BOM = b"\xef\xbb\xbf"
RECORD_LIMIT = 128 * 1024  # bytes, CSVRecordReader.maximumRecord
LINE_ENDS = {  # the line end after each physical line of the file below
    "cr": ["\r"] * 8,
    "crlf": ["\r\n"] * 8,
    "mixed": ["\r\n", "\r", "\n", "\n", "\r", "\r\n", "\r", "\n"],
}


@pytest.mark.parametrize("ends", sorted(LINE_ENDS))
def test_a_byte_order_mark_and_cr_crlf_or_mixed_line_ends_import_every_row(herald, tmp_path, db, ends):
    """Excel's "CSV UTF-8" starts with a BOM; classic Mac files end lines with CR alone."""
    config = campaign_config(tmp_path)
    lines = [
        "email,display_name,plan",              # 1
        "ada@example.com,Ada,gold",             # 2 good
        "nope,Nobody,gold",                     # 3 invalid address
        'grace@example.com,"Hopper, Grace",x',  # 4 good
        "",                                     # 5 blank, skipped
        'linus@example.com,Linus,"two',         # 6-7 good: the line end inside quotes is content
        'lines"',
        "ken@example.com,Ken,bronze",           # 8 good
    ]
    separators = LINE_ENDS[ends]
    recipients = tmp_path / "lineends.csv"
    recipients.write_bytes(BOM + "".join(line + end for line, end in zip(lines, separators)).encode())

    summary = create_campaign(herald, config, "line-ends", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (4, 1), summary["stdout"]
    assert read_rejects(tmp_path / "lineends.csv.rejects.csv") == [
        ["line", "reason", "content"], ["3", "invalid address", "nope,Nobody,gold"]]
    rows = {row["recipient"]: row for row in campaign_rows(db, summary["id"])}
    assert set(rows) == {"ada@example.com", "grace@example.com", "linus@example.com", "ken@example.com"}
    assert rows["grace@example.com"]["display_name"] == "Hopper, Grace"
    assert json.loads(rows["linus@example.com"]["variables"])["plan"] == "two" + separators[5] + "lines"
    assert json.loads(rows["ken@example.com"]["variables"])["plan"] == "bronze", "the last row must not keep a CR"


def test_an_unterminated_quote_rejects_only_its_line_and_the_rows_after_it_import(herald, tmp_path, db):
    """A quote left open costs its own line: it ends at the record bound or at a closing quote
    that cannot end a field, and reading restarts on the next line. Real multi-line fields still work."""
    config = campaign_config(tmp_path)
    after = addresses("after", 6000)  # ~190 KB without a quote: past the record bound
    lines = [
        "first@x.test,First,gold",                                          # 2 good
        'stray@x.test,"Stray quote,gold',                                   # 3 open until the bound
        *[f"{email},After {i},silver" for i, email in enumerate(after, 1)],  # 4-6003 good
        'second@x.test,"Second stray,gold',                                 # 6004 closed by the next row's quote
        'multi@x.test,Multi,"line one',                                     # 6005-6006 good, one record
        'line two"',
        'last@x.test,"Never closed,gold',                                   # 6007 open at the end of the file
    ]
    assert sum(len(line) + 1 for line in lines[2:-3]) > RECORD_LIMIT
    recipients = write_recipients(tmp_path / "stray.csv", "email,display_name,plan", lines)

    summary = create_campaign(herald, config, "stray", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (6002, 3), summary["stdout"]
    assert read_rejects(tmp_path / "stray.csv.rejects.csv") == [
        ["line", "reason", "content"],
        ["3", "unterminated quoted field", lines[1]],
        ["6004", "unterminated quoted field", lines[6002]],
        ["6007", "unterminated quoted field", lines[-1]],
    ]
    rows = {row["recipient"]: row for row in campaign_rows(db, summary["id"])}
    assert set(rows) == {"first@x.test", "multi@x.test", *after}
    assert json.loads(rows["multi@x.test"]["variables"])["plan"] == "line one\nline two"
    assert rows["after6000@x.test"]["display_name"] == "After 6000"


def test_the_rejects_file_is_valid_csv_whatever_the_content(herald, tmp_path):
    """Quotes before combining marks, CR, LF, CRLF, commas and edge spaces all read back exactly."""
    config = campaign_config(tmp_path)
    nasty = [  # (line, reason, raw row)
        (2, "invalid address", 'no-at-sign,"Jos\u00e9 ""\u0301"" Q",gold'),
        (3, "invalid address", 'x"\u0301y,Q,gold'),
        (4, "invalid address", 'nobody-at-all,Name,"line one\r\nline two"'),
        (6, "invalid address", 'lonely,Name,"a\rb"'),
        (8, "invalid address", "  spaced  ,Name,gold "),
        (9, "invalid address", '"\u0301",Name,gold'),
        (10, "wrong column count: expected 3, found 2", 'a"\u0301b,"c,d"'),
        (11, "malformed quotes", '"ab"c,x,y'),
    ]
    recipients = write_recipients(tmp_path / "nasty.csv", "email,display_name,plan",
                                  [raw for _, _, raw in nasty] + ["ok@x.test,Fine,gold"])

    summary = create_campaign(herald, config, "nasty", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (1, len(nasty)), summary["stdout"]
    rejects = read_rejects(tmp_path / "nasty.csv.rejects.csv")
    assert rejects[0] == ["line", "reason", "content"]
    expected = [[str(line), reason, raw] for line, reason, raw in nasty]
    for want, got in zip(expected, rejects[1:]):
        assert got == want, f"rejects row for line {want[0]}:\n got  {got!r}\n want {want!r}"
    assert len(rejects) == len(expected) + 1, rejects


def test_an_over_long_record_is_rejected_alone_and_the_next_rows_import(herald, tmp_path, db):
    config = campaign_config(tmp_path)
    long_row = b"long@x.test,Long," + b"p" * (2 * RECORD_LIMIT)
    recipients = write_recipients(tmp_path / "long.csv", "email,display_name,plan",
                                  [b"before@x.test,Before,gold", long_row, b"after@x.test,After,gold"])

    summary = create_campaign(herald, config, "long", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (2, 1), summary["stdout"]
    assert read_rejects(tmp_path / "long.csv.rejects.csv")[1:] == [
        ["3", f"record too long: over {RECORD_LIMIT} bytes", long_row[:RECORD_LIMIT].decode()]]
    assert {row["recipient"] for row in campaign_rows(db, summary["id"])} == {"before@x.test", "after@x.test"}


@pytest.mark.parametrize("case", ["long column name", "huge column name", "too many columns", "unterminated quote"])
def test_an_unbounded_or_broken_header_refuses_the_file(herald, tmp_path, db, case):
    config = campaign_config(tmp_path)
    header, needles = {
        "long column name": ("email," + "n" * 257, ("256", "column 2")),
        "huge column name": ("email," + "n" * (10 << 20), (str(RECORD_LIMIT), "256")),
        "too many columns": ("email," + ",".join(f"c{i}" for i in range(256)), ("257 columns", "256")),
        "unterminated quote": ('email,"plan', ("unterminated quoted field",)),
    }[case]
    recipients = write_recipients(tmp_path / "header.csv", header, ["one@x.test,gold"])
    args = ("campaign", "create", "header", "--action", "verify-email", "--recipients", str(recipients))
    result = run(herald, *args, config=config, check=False)
    assert_cli_error(args, result, *needles, status=64)  # bad input
    nothing_written(db)
    assert not list(tmp_path.glob("*.rejects.csv")), "a refused import wrote a rejects file"


def test_a_header_of_256_columns_of_256_bytes_is_accepted(herald, tmp_path, db):
    config = campaign_config(tmp_path)
    names = ["email"] + [f"c{i:03d}".ljust(256, "x") for i in range(255)]
    recipients = write_recipients(tmp_path / "wide.csv", ",".join(names), ["one@x.test" + ",v" * 255])
    summary = create_campaign(herald, config, "wide", "--action", "verify-email", "--recipients", str(recipients))
    assert (summary["imported"], summary["rejected"]) == (1, 0), summary["stdout"]


def test_a_campaign_is_previewed_per_recipient_and_its_mail_offers_a_way_out(herald, capture, tmp_path):
    """`campaigns preview` renders what one recipient will get (their locale, name and columns, the link lifetime's
    plural, the unsubscribe line) before the campaign starts; the mail sent later says the same."""
    import email as email_lib
    import email.policy

    templates = tmp_path / "templates"
    shutil.copytree(REPO_ROOT / "templates", templates)
    body = templates / "verify-email" / "pl" / "body.txt.mustache"
    body.write_text(body.read_text(encoding="utf-8").rstrip("\n") + "\nPlan: {{plan}}\n", encoding="utf-8")
    config = campaign_config(tmp_path, capture, templates={"directory": str(templates)})
    recipients = write_recipients(tmp_path / "preview.csv", "email,display_name,locale,plan", [
        "ada@example.com,Ada Lovelace,en,gold",
        "jan@example.com,Jan Kowalski,pl,silver",
    ])
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    summary = create_campaign(herald, config, "preview", "--action", "verify-email", "--recipients", str(recipients),
                              "--link-lifetime", "5h", "--start-at", later)
    cid = str(summary["id"])

    shown = run(herald, "campaigns", "preview", cid, "--email", "jan@example.com", config=config)
    message = email_lib.message_from_string(shown.stdout, policy=email.policy.default)
    assert message["To"].endswith("<jan@example.com>") and "Jan Kowalski" in message["To"], message["To"]
    text = text_part(message)
    assert "Plan: silver" in text and "przez 5 godzin." in text, text
    assert "Wypisz się z tych wiadomości:" in text and "https://app.example.com/unsubscribe?token=" in text, text
    assert "PREVIEW-ONLY-NOT-A-VALID-CODE" in text, "a preview's link carries the sample code"
    assert message["List-Unsubscribe"], "a campaign preview is campaign mail"

    english = text_part(email_lib.message_from_string(
        run(herald, "campaigns", "preview", cid, "--email", "ada@example.com", config=config).stdout,
        policy=email.policy.default))
    assert "expires in 5 hours." in english and "Unsubscribe from these emails:" in english, english
    assert capture.messages() == [], "a preview sends nothing"

    missing = herald("campaigns", "preview", cid, "--email", "nobody@example.com", config=config, check=False)
    assert_cli_error(("campaigns", "preview"), missing, "nobody@example.com", status=3)
    unknown = herald("campaigns", "preview", "999999", config=config, check=False)
    assert_cli_error(("campaigns", "preview"), unknown, status=3)

    # Sent for real (a campaign starting now, the scheduled one cancelled): the same lines reach the mailbox.
    run(herald, "campaigns", "cancel", cid, config=config)
    now = write_recipients(tmp_path / "now.csv", "email,locale", ["grace@example.com,pl"])
    create_campaign(herald, config, "now", "--action", "verify-email", "--recipients", str(now), "--link-lifetime", "2h")
    herald.worker_until_empty(config)
    sent = [m for m in capture.messages() if m["rcpt_tos"] == ["grace@example.com"]]
    assert len(sent) == 1, capture.messages()
    delivered = text_part(sent[0]["message"])
    assert "przez 2 godziny." in delivered and "Wypisz się z tych wiadomości:" in delivered, delivered


def write_template_set(root, locales: dict) -> None:
    """A campaign's own verify-email templates: {locale: (subject, text line)} with the global layout."""
    for locale, (subject, line) in locales.items():
        folder = root / locale
        folder.mkdir(parents=True)
        (folder / "subject.mustache").write_text("{{% CONTENT_TYPE: TEXT}}\n" + subject + "\n", encoding="utf-8")
        (folder / "body.txt.mustache").write_text(
            "{{% CONTENT_TYPE: TEXT}}\n" + line + "\n\n{{link}}\n{{#unsubscribeLink}}\n\nOut: {{unsubscribeLink}}\n{{/unsubscribeLink}}\n",
            encoding="utf-8")
        (folder / "body.html.mustache").write_text(
            "{{<layout}}{{$content}}<p>" + line + '</p><p><a href="{{link}}">{{link}}</a></p>{{/content}}{{/layout}}\n',
            encoding="utf-8")


def test_a_campaign_sends_with_its_own_templates_and_its_columns(herald, capture, tmp_path):
    """`--templates DIR`: the campaign's mail (and its preview) use its own subject and bodies per locale, with the
    CSV's extra columns; other mail keeps the global templates. Sets that do not parse, lack a part or the default
    locale are refused before anything is written."""
    import email as email_lib
    import email.policy

    config = campaign_config(tmp_path, capture)
    own = tmp_path / "reverify"
    write_template_set(own, {"en": ("Still with us, {{displayName}}? ({{plan}})", "Your {{plan}} plan needs a verified address."),
                             "de": ("Noch dabei? ({{plan}})", "Ihr Tarif {{plan}} braucht eine bestätigte Adresse.")})
    recipients = write_recipients(tmp_path / "own.csv", "email,display_name,locale,plan", [
        "ada@example.com,Ada Lovelace,en,gold",
        "jurgen@example.com,Jürgen Müller,de-AT,silver",
        "jan@example.com,Jan Kowalski,pl,bronze",
    ])
    # No worker runs yet: the rows wait, and the preview comes first.
    summary = create_campaign(herald, config, "reverify", "--action", "verify-email", "--recipients", str(recipients),
                              "--templates", str(own))
    cid = str(summary["id"])
    preview = email_lib.message_from_string(
        run(herald, "campaigns", "preview", cid, "--email", "ada@example.com", config=config).stdout,
        policy=email.policy.default)
    assert preview["Subject"] == "Still with us, Ada Lovelace? (gold)", preview["Subject"]
    assert capture.messages() == [], "a preview sends nothing"

    run(herald, "send", "verify-email", "grace@example.com", "--continue-url", "https://app.example.com/done",
        config=config)
    herald.worker_until_empty(config)
    mails = {m["rcpt_tos"][0]: m["message"] for m in capture.messages()}
    assert set(mails) == {"ada@example.com", "jurgen@example.com", "jan@example.com", "grace@example.com"}, set(mails)
    assert str(mails["ada@example.com"]["Subject"]) == "Still with us, Ada Lovelace? (gold)"
    ada = text_part(mails["ada@example.com"])
    assert "Your gold plan needs a verified address." in ada and "Out: https://app.example.com/unsubscribe?token=" in ada, ada
    # de-AT takes the set's de; pl, which the set lacks, takes the set's default locale (en), not the global pl.
    assert str(mails["jurgen@example.com"]["Subject"]) == "Noch dabei? (silver)"
    assert "Ihr Tarif silver braucht eine bestätigte Adresse." in text_part(mails["jurgen@example.com"])
    assert "Your bronze plan needs a verified address." in text_part(mails["jan@example.com"])
    # Mail outside the campaign keeps the global templates.
    assert "Verify" in str(mails["grace@example.com"]["Subject"]), mails["grace@example.com"]["Subject"]

    # Refused before anything is written: a set without the default locale, a missing part, a file that does not parse.
    broken = {}
    broken["no default locale"] = tmp_path / "only-de"
    write_template_set(broken["no default locale"], {"de": ("Hallo", "Text")})
    broken["a missing part"] = tmp_path / "no-html"
    write_template_set(broken["a missing part"], {"en": ("Hi", "Text")})
    (broken["a missing part"] / "en" / "body.html.mustache").unlink()
    broken["unparsable"] = tmp_path / "unparsable"
    write_template_set(broken["unparsable"], {"en": ("Hi {{#plan}}", "Text")})
    before = len(json.loads(run(herald, "campaigns", "list", "--format", "json", config=config).stdout))
    for why, folder in broken.items():
        result = herald("campaigns", "create", f"broken-{folder.name}", "--action", "verify-email", "--recipients",
                        str(recipients), "--templates", str(folder), config=config, check=False)
        assert result.returncode != 0 and result.stderr.strip(), f"{why}: {result.returncode} {result.stderr}"
        assert len(result.stderr.strip().splitlines()) == 1, f"{why}: one line expected\n{result.stderr}"
    after = len(json.loads(run(herald, "campaigns", "list", "--format", "json", config=config).stdout))
    assert after == before, "a refused template set created a campaign"

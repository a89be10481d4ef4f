"""Happy-path delivery: every action end to end, locales, and the wire format."""

from __future__ import annotations

import re

import pytest

from helpers import (
    ACTION_URL, API_KEY, FROM_ADDRESS, MODES, OOB_CODE_RE, action_link, by_recipient,
    html_part, parse_link, raw_header, text_part, write_config,
)

CONTINUE = "https://app.example.com/welcome?step=2&ref=mail"

# (action, recipient, extra options, expected envelope recipient)
ACTIONS = [
    ("sign-in", "signin@x.test", ["--continue-url", CONTINUE], "signin@x.test"),
    ("verify-email", "verify@x.test", ["--continue-url", CONTINUE], "verify@x.test"),
    ("reset-password", "reset@x.test", ["--continue-url", CONTINUE], "reset@x.test"),
    # Like Firebase, the verification link goes to the *new* address.
    ("verify-and-change-email", "old@x.test",
     ["--new-email", "new@x.test", "--continue-url", CONTINUE], "new@x.test"),
]


def check_link(link: str, mode: str, lang: str = "en", continue_url: str = CONTINUE) -> dict:
    parsed = parse_link(link)
    assert parsed["base"] == ACTION_URL, link
    params = parsed["params"]
    assert params["apiKey"] == API_KEY
    assert params["mode"] == mode
    assert params["continueUrl"] == continue_url
    assert params["lang"] == lang
    assert OOB_CODE_RE.fullmatch(params["oobCode"]), f"oobCode not >=43 chars of base64url: {params['oobCode']!r}"
    return parsed


def test_each_action_is_delivered_end_to_end(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    ids = {}
    for action, email, options, rcpt in ACTIONS:
        ids[rcpt] = herald.send(action, email, *options, config=config)
    herald.worker_until_empty(config)

    received = by_recipient(capture.messages())
    assert sorted(received) == sorted(ids), "each message goes to exactly its recipient"
    codes = set()
    listed = {m["id"]: m for m in herald.messages(config)}
    for action, _email, _options, rcpt in ACTIONS:
        [item] = received[rcpt]
        msg = item["message"]
        assert msg.get_content_type() == "multipart/alternative"
        assert {p.get_content_type() for p in msg.iter_parts()} >= {"text/plain", "text/html"}
        assert msg["From"].addresses[0].addr_spec == FROM_ADDRESS
        assert rcpt in msg["To"]
        parsed = check_link(action_link(msg), MODES[action])
        codes.add(parsed["params"]["oobCode"])

        row = listed[ids[rcpt]]
        assert row["state"] == "sent"
        assert row["lastReplyCode"] == 250
        assert row["attempts"] == 1
        assert row["sentAt"]
        assert row["messageId"] == msg["Message-ID"].strip()
    assert len(codes) == len(ACTIONS), "every message carries its own code"

    change = listed[ids["new@x.test"]]
    # `recipient` is where the mail went; `email` is the account's current address.
    assert change["recipient"] == "new@x.test"
    assert change["email"] == "old@x.test"
    assert change["newEmail"] == "new@x.test"
    assert change["action"] == "verify-and-change-email"


def test_sign_in_with_link_domain_wraps_the_link(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    herald.send("sign-in", "inapp@x.test", "--continue-url", CONTINUE, "--handle-code-in-app",
                "--link-domain", "herald-demo.firebaseapp.com", config=config)
    herald.worker_until_empty(config)

    [item] = capture.messages()
    link = action_link(item["message"])
    assert link.startswith("https://herald-demo.firebaseapp.com/__/auth/links?link="), link
    parsed = check_link(link, "signIn")
    assert parsed["wrapper"]["host"] == "herald-demo.firebaseapp.com"


@pytest.mark.parametrize(
    "locale, action, letters",
    [
        ("pl", "reset-password", "[ąćęłńóśźżĄĆĘŁŃÓŚŹŻ]"),  # "hasło" and friends
        ("fa", "verify-email", "[\u0600-\u06ff]"),  # Arabic script, which Persian is written in
    ],
    ids=["pl", "fa"],
)
def test_localized_subject_is_rfc2047_encoded(herald, capture, tmp_path, locale, action, letters):
    config = write_config(tmp_path, capture)
    outbox_id = herald.send(action, f"{locale}@x.test", "--locale", locale,
                            "--continue-url", CONTINUE, config=config)
    herald.worker_until_empty(config)

    [item] = capture.messages()
    msg, raw = item["message"], item["raw"]
    subject = str(msg["Subject"])
    assert re.search(letters, subject), f"subject has no {locale} letters: {subject!r}"
    assert "\ufffd" not in subject and "??" not in subject, f"mojibake in subject: {subject!r}"

    encoded = raw_header(raw, "Subject")
    assert encoded.isascii(), f"raw Subject must be ASCII: {encoded!r}"
    assert re.search(rb"=\?utf-8\?[bq]\?", encoded, re.I), f"raw Subject not RFC 2047: {encoded!r}"

    html = html_part(msg)
    rtl = re.search(r"""dir\s*=\s*["']?rtl""", html, re.I)
    if locale == "fa":
        assert rtl, "Persian html part must carry dir=\"rtl\""
    else:
        assert not rtl, "only right-to-left locales get dir=\"rtl\""
    check_link(action_link(msg), MODES[action], lang=locale)
    assert herald.message(config, outbox_id)["locale"] == locale


def test_messages_are_well_formed_on_the_wire(herald, capture, tmp_path):
    """Nothing truncated, CRLF everywhere, no line over 998 octets, required headers.
    (Dot-stuffing of lines starting with "." is covered at transport level by the Swift tests.)"""
    config = write_config(tmp_path, capture)
    long_name = "Zoë " + "Bartholomew-" * 12 + "Ångström"
    herald.send("verify-email", "a@x.test", "--display-name", long_name, config=config)
    herald.send("reset-password", "b@x.test", "--locale", "pl", config=config)
    herald.send("verify-email", "c@x.test", "--locale", "fa", config=config)
    herald.send("sign-in", "d@x.test", "--locale", "de", "--continue-url", CONTINUE, config=config)
    herald.send("verify-and-change-email", "e@x.test", "--new-email", "f@x.test", config=config)
    herald.worker_until_empty(config)

    messages = capture.wait_for_messages(5, timeout=5)
    assert len(messages) == 5
    for item in messages:
        raw, msg = item["raw"], item["message"]
        assert b"\n" not in raw.replace(b"\r\n", b""), "bare LF in message"
        assert b"\r" not in raw.replace(b"\r\n", b""), "bare CR in message"
        longest = max(len(line) for line in raw.split(b"\r\n"))
        assert longest <= 998, f"line of {longest} octets"

        boundary = msg.get_boundary()
        assert boundary, "multipart message without boundary"
        assert raw.rstrip(b"\r\n").endswith(b"--" + boundary.encode("ascii") + b"--"), \
            "message does not end with the closing MIME boundary"
        assert msg.defects == [], msg.defects
        for part in msg.walk():
            assert part.defects == [], part.defects
        assert "</html>" in html_part(msg).lower()
        assert text_part(msg).strip()

        for header in ("Message-ID", "Date", "From", "To", "Subject", "MIME-Version"):
            assert msg[header], f"missing {header}"
        assert msg["Auto-Submitted"] == "auto-generated"
        assert msg["Date"].datetime.tzinfo is not None
        assert re.fullmatch(r"<[^<>@\s]+@[^<>@\s]+>", msg["Message-ID"].strip()), msg["Message-ID"]
        assert msg.get_content_type() == "multipart/alternative"
        for part in msg.iter_parts():
            assert part.get_content_charset() == "utf-8"
    message_ids = {m["message"]["Message-ID"] for m in messages}
    assert len(message_ids) == 5, "Message-IDs must be unique"


def test_messages_json_filters_by_state_and_email(herald, start_capture, tmp_path):
    capture = start_capture(script=["rcpt=bounce:550:5.1.1 No such user"])
    config = write_config(tmp_path, capture)
    good = herald.send("verify-email", "good@x.test", config=config)
    bad = herald.send("verify-email", "bounce@x.test", config=config)
    herald.worker_until_empty(config)

    assert [m["id"] for m in herald.messages(config, state="failed")] == [bad]
    assert [m["id"] for m in herald.messages(config, state="sent")] == [good]
    assert [m["id"] for m in herald.messages(config, email="good@x.test")] == [good]
    assert herald.messages(config, state="queued") == []
    everything = herald.messages(config)
    assert sorted(m["id"] for m in everything) == sorted([good, bad])
    for m in everything:
        assert isinstance(m["queuedAt"], str) and m["queuedAt"]
        assert m["newEmail"] is None
        assert m["locale"] == "en"


def test_one_connection_is_reused_for_a_batch(herald, capture, tmp_path):
    config = write_config(tmp_path, capture, smtp={"connections": 1})
    for i in range(5):
        herald.send("verify-email", f"user{i}@x.test", config=config)
    herald.worker_until_empty(config)

    messages = capture.messages()
    assert len(messages) == 5
    assert {m["session"] for m in messages} == {1}, "5 queued messages, connections: 1 -> one SMTP session"

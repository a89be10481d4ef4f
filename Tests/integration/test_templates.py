"""`herald templates preview` renders sample data and sends nothing."""

from __future__ import annotations

import email
import email.policy

from helpers import MODES, action_link, parse_link, row_count, write_config


def test_preview_writes_a_parseable_message_and_sends_nothing(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    out = tmp_path / "preview.eml"
    herald("templates", "preview", "verify-email", "--locale", "de", "--out", out, config=config)

    msg = email.message_from_bytes(out.read_bytes(), policy=email.policy.default)
    assert msg.get_content_type() == "multipart/alternative"
    assert str(msg["Subject"]).strip()
    params = parse_link(action_link(msg))["params"]
    assert params["mode"] == MODES["verify-email"]
    assert params["lang"] == "de"
    assert capture.messages() == [] and capture.connections == 0
    assert row_count(db, "outbox") == 0


def test_preview_to_stdout_and_html(herald, capture, tmp_path, db):
    config = write_config(tmp_path, capture)
    result = herald("templates", "preview", "reset-password", config=config)
    msg = email.message_from_bytes(result.stdout_bytes, policy=email.policy.default)
    assert msg.get_content_type() == "multipart/alternative"
    assert parse_link(action_link(msg))["params"]["mode"] == MODES["reset-password"]

    html = tmp_path / "preview.html"
    herald("templates", "preview", "sign-in", "--locale", "fa", "--out", html, config=config)
    text = html.read_text(encoding="utf-8")
    assert "<html" in text.lower() and "oobCode=" in text
    assert capture.connections == 0
    assert row_count(db, "outbox") == 0

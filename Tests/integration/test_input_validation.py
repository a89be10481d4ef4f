"""Rejected input: one `error:` line on stderr, non-zero exit, nothing written."""

from __future__ import annotations

import pytest

from helpers import assert_one_error_line, error_lines, row_count, write_config

OK = "https://app.example.com/finish"


@pytest.fixture
def migrated(herald, capture, tmp_path, db):
    """A config pointing at a capture server and an already migrated, empty DB,
    so "nothing written" is checked against real tables."""
    config = write_config(tmp_path, capture)
    herald("migrate", config=config)
    assert row_count(db, "outbox") == 0
    return config


def assert_nothing_written(db, capture) -> None:
    assert row_count(db, "outbox") == 0
    assert row_count(db, "action_codes") == 0
    assert capture.messages() == []


@pytest.mark.parametrize(
    "args",
    [
        ["verify-email", "a@x.test", "--display-name", "Eve\r\nBcc: victim@x.test"],
        ["verify-email", "a@x.test", "--display-name", "Eve\nBcc: victim@x.test"],
        ["verify-email", "a@x.test", "--display-name", "Eve\rBcc: victim@x.test"],
        ["verify-email", "a@x.test\r\nBcc: victim@x.test"],
        ["verify-and-change-email", "a@x.test", "--new-email", "b@x.test\r\nBcc: victim@x.test"],
    ],
    ids=["display-name-crlf", "display-name-lf", "display-name-cr", "recipient-crlf", "new-email-crlf"],
)
def test_header_injection_is_rejected(herald, capture, migrated, db, args):
    result = herald("send", *args, config=migrated, check=False)
    assert_one_error_line(result)
    assert result.stdout.strip() == ""
    # run a worker anyway: there must be nothing to send
    herald.worker_until_empty(migrated)
    assert_nothing_written(db, capture)


@pytest.mark.parametrize(
    "args, code",
    [
        (["verify-email", "not-an-address"], "INVALID_EMAIL"),
        (["verify-email", "user@"], "INVALID_EMAIL"),
        (["verify-and-change-email", "a@x.test", "--new-email", "nope"], "INVALID_NEW_EMAIL"),
        (["delete-account", "a@x.test"], None),
        (["verify-email", "a@x.test", "--continue-url", "https://evil.example/"], "UNAUTHORIZED_DOMAIN"),
        (["verify-email", "a@x.test", "--continue-url", "https://app.example.com@evil.example/"],
         "UNAUTHORIZED_DOMAIN"),
        (["verify-email", "a@x.test", "--continue-url", "https://app.example.com.evil.example/"],
         "UNAUTHORIZED_DOMAIN"),
        (["sign-in", "a@x.test"], "MISSING_CONTINUE_URI"),
        (["verify-and-change-email", "a@x.test"], "MISSING_NEW_EMAIL"),
        (["sign-in", "a@x.test", "--continue-url", OK, "--link-domain", "herald-demo.page.link"], "INVALID_HOSTING_LINK_DOMAIN"),
        (["sign-in", "a@x.test", "--continue-url", OK, "--dynamic-link-domain", "herald.page.link"],
         "INVALID_DYNAMIC_LINK_DOMAIN"),
    ],
    ids=[
        "no-at-sign", "no-domain", "invalid-new-email", "unknown-action", "unauthorized-continue-url",
        "userinfo-trick", "suffix-trick", "sign-in-without-continue-url", "change-without-new-email",
        "unauthorized-link-domain", "dynamic-link-domain",
    ],
)
def test_bad_input_writes_nothing(herald, capture, migrated, db, args, code):
    result = herald("send", *args, config=migrated, check=False)
    assert_one_error_line(result, *([code] if code else []))
    assert result.stdout.strip() == ""
    assert_nothing_written(db, capture)


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"smtp": {"url": "http://x"}}, "smtp.url"),
        ({"links": {"lifetime": {"signIn": "forever"}}}, "links.lifetime.signIn"),
        ({"worker": {"backoffBase": "soon"}}, "worker.backoffBase"),
    ],
    ids=["smtp-url-scheme", "bad-duration", "bad-backoff"],
)
def test_invalid_config_stops_startup_naming_the_key(herald, capture, tmp_path, overrides, key):
    config = write_config(tmp_path, capture, **overrides)
    result = herald("worker", "--until-empty", config=config, check=False, timeout=30)
    assert result.returncode != 0
    lines = error_lines(result.stderr)
    assert len(lines) == 1, f"expected one stderr line:\n{result.stderr}"
    assert key in lines[0], f"{key!r} not named in {lines[0]!r}"
    assert capture.messages() == []


def test_invalid_env_override_names_the_key(herald, capture, tmp_path):
    config = write_config(tmp_path, capture)
    result = herald("worker", "--until-empty", config=config, check=False, timeout=30,
                    env={"HERALD_SMTP_URL": "http://x"})
    assert result.returncode != 0
    lines = error_lines(result.stderr)
    assert len(lines) == 1, f"expected one stderr line:\n{result.stderr}"
    assert "smtp.url" in lines[0] or "HERALD_SMTP_URL" in lines[0], lines[0]

"""Self-tests of Tests/support/smtp_server.py (no herald binary needed).

curl is the independent SMTP client (as libcurl is Herald's); smtplib is used
where exact reply codes matter.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import smtplib
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SUPPORT_DIR, make_cert
from smtp_server import read_jsonl

RAW = (b"From: a@x.test\r\nTo: b@y.test\r\nSubject: hi\r\n\r\n"
       b"line one\r\n.leading dot\r\n..two dots\r\n.\r\nlast\r\n")


def curl(port: int, tmp_path: Path, *extra: str, rcpt: str = "b@y.test") -> subprocess.CompletedProcess:
    if shutil.which("curl") is None:
        pytest.fail("curl is required for the capture-server self-tests")
    msg = tmp_path / "msg.eml"
    msg.write_bytes(RAW)
    return subprocess.run(
        ["curl", "-sS", "--max-time", "20", "--url", f"smtp://127.0.0.1:{port}/client.example",
         "--mail-from", "a@x.test", "--mail-rcpt", rcpt, "--upload-file", str(msg), *extra],
        capture_output=True, text=True, timeout=30,
    )


def test_accepts_and_keeps_raw_bytes_including_dot_lines(start_capture, tmp_path):
    server = start_capture(maildir=tmp_path / "mail", jsonl=tmp_path / "mail.jsonl")
    assert curl(server.port, tmp_path).returncode == 0
    [item] = server.messages()
    assert item["raw"] == RAW
    assert item["mail_from"] == "a@x.test" and item["rcpt_tos"] == ["b@y.test"]
    assert item["tls"] is False and item["auth_user"] is None and item["session"] == 1
    assert item["message"]["Subject"] == "hi"
    [maildir_file] = (tmp_path / "mail" / "new").iterdir()
    assert maildir_file.read_bytes() == RAW
    [record] = read_jsonl(tmp_path / "mail.jsonl")
    assert record["raw"] == RAW and isinstance(record["received_at"], float)


def test_scripted_replies_by_data_number_and_recipient(start_capture):
    server = start_capture(script=["2:451:4.3.0 Try again later", "3:550:5.1.1 No such user",
                                   "rcpt=blocked:550:5.7.1 Denied"])
    with smtplib.SMTP("127.0.0.1", server.port, timeout=10) as smtp:
        smtp.sendmail("a@x.test", ["b@y.test"], RAW)
        with pytest.raises(smtplib.SMTPDataError) as e451:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
        with pytest.raises(smtplib.SMTPDataError) as e550:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
        refused = smtp.sendmail("a@x.test", ["ok@y.test", "blocked@y.test"], RAW)
    assert (e451.value.smtp_code, e451.value.smtp_error) == (451, b"4.3.0 Try again later")
    assert (e550.value.smtp_code, e550.value.smtp_error) == (550, b"5.1.1 No such user")
    assert refused == {"blocked@y.test": (550, b"5.7.1 Denied")}
    assert [m["rcpt_tos"] for m in server.messages()] == [["b@y.test"], ["ok@y.test"]]
    assert server.data_commands == 4 and server.connections == 1


def test_drop_greeting_and_curl_failures(start_capture, tmp_path):
    dropper = start_capture(script=["1:drop"])
    assert curl(dropper.port, tmp_path).returncode != 0
    assert curl(dropper.port, tmp_path).returncode == 0  # only the first DATA is dropped
    assert dropper.connections == 2 and len(dropper.messages()) == 1

    closed = start_capture(script=["greeting=421"])
    with pytest.raises(smtplib.SMTPConnectError) as err:
        smtplib.SMTP("127.0.0.1", closed.port, timeout=10)
    assert err.value.smtp_code == 421

    failing = start_capture(script=["*:550:5.1.1 No such user"])
    result = curl(failing.port, tmp_path, "-v")
    assert result.returncode != 0 and "< 550 5.1.1 No such user" in result.stderr
    assert failing.messages() == []


def test_stall_never_answers(start_capture):
    server = start_capture(script=["1:stall"])
    with pytest.raises((TimeoutError, smtplib.SMTPServerDisconnected)):
        with smtplib.SMTP("127.0.0.1", server.port, timeout=1) as smtp:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
    assert server.messages() == [] and server.data_commands == 1


def test_late_keeps_the_message_of_a_client_that_gave_up_waiting(start_capture):
    server = start_capture(script=["1:late=3"])
    with pytest.raises((TimeoutError, smtplib.SMTPServerDisconnected)):
        with smtplib.SMTP("127.0.0.1", server.port, timeout=1) as smtp:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
    [kept] = server.messages()  # recorded when its final dot arrived, before the late reply
    assert kept["rcpt_tos"] == ["b@y.test"] and server.data_commands == 1
    with smtplib.SMTP("127.0.0.1", server.port, timeout=10) as smtp:  # only the first DATA is late
        smtp.sendmail("a@x.test", ["c@y.test"], RAW)
    assert [m["rcpt_tos"] for m in server.messages()] == [["b@y.test"], ["c@y.test"]]


def test_mail_stall_and_drop_come_before_any_of_the_message(start_capture):
    stalled = start_capture(script=["mail@1=stall"])
    with pytest.raises((TimeoutError, smtplib.SMTPServerDisconnected)):
        with smtplib.SMTP("127.0.0.1", stalled.port, timeout=1) as smtp:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
    assert stalled.mail_commands == 1 and stalled.data_commands == 0
    with smtplib.SMTP("127.0.0.1", stalled.port, timeout=10) as smtp:  # the second MAIL is answered
        smtp.sendmail("a@x.test", ["b@y.test"], RAW)
    assert len(stalled.messages()) == 1

    dropped = start_capture(script=["mail=drop"])
    with pytest.raises(smtplib.SMTPServerDisconnected):
        with smtplib.SMTP("127.0.0.1", dropped.port, timeout=10) as smtp:
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
    assert dropped.mail_commands == 1 and dropped.data_commands == 0 and dropped.messages() == []


def test_starttls_and_auth_with_curl(start_capture, tmp_path):
    cert, key = make_cert(tmp_path / "certs")
    server = start_capture(tls=(cert, key), require_starttls=True, auth="alice:s3cret")

    assert curl(server.port, tmp_path).returncode != 0  # no STARTTLS -> 530 on MAIL
    ok = curl(server.port, tmp_path, "--ssl-reqd", "--cacert", str(cert), "--user", "alice:s3cret")
    assert ok.returncode == 0, ok.stderr
    login = curl(server.port, tmp_path, "--ssl-reqd", "--insecure", "--user", "alice:s3cret",
                 "--login-options", "AUTH=LOGIN")
    assert login.returncode == 0, login.stderr
    wrong = curl(server.port, tmp_path, "--ssl-reqd", "--insecure", "--user", "alice:wrong")
    assert wrong.returncode == 67, wrong.stderr  # CURLE_LOGIN_DENIED, i.e. a 535 and no hang
    untrusted = curl(server.port, tmp_path, "--ssl-reqd", "--user", "alice:s3cret")
    assert untrusted.returncode == 60, untrusted.stderr  # CURLE_PEER_FAILED_VERIFICATION

    messages = server.messages()
    assert [(m["tls"], m["auth_user"]) for m in messages] == [(True, "alice"), (True, "alice")]
    assert all(m["raw"] == RAW for m in messages)


def test_cli_prints_ready_and_exits_0_on_sigterm(tmp_path):
    jsonl = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(SUPPORT_DIR / "smtp_server.py"), "--port", "0", "--jsonl", str(jsonl),
         "--script", "1:451:4.3.0 Try again"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY "), line
        port = int(line.split()[1])
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
            with pytest.raises(smtplib.SMTPDataError):
                smtp.sendmail("a@x.test", ["b@y.test"], RAW)
            smtp.sendmail("a@x.test", ["b@y.test"], RAW)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == "", "only the READY line goes to stdout"
        [record] = [json.loads(x) for x in jsonl.read_text().splitlines()]
        assert record["session"] == 1 and record["rcpt_tos"] == ["b@y.test"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_cli_lifetime_and_bad_script(tmp_path):
    server = SUPPORT_DIR / "smtp_server.py"
    quick = subprocess.run([sys.executable, str(server), "--lifetime", "0.5"],
                           capture_output=True, text=True, timeout=20)
    assert quick.returncode == 0 and quick.stdout.startswith("READY ")
    bad = subprocess.run([sys.executable, str(server), "--script", "bogus"],
                         capture_output=True, text=True, timeout=20)
    assert bad.returncode == 2 and bad.stdout == "" and "bogus" in bad.stderr


def test_make_cert_cli(tmp_path):
    out = tmp_path / "certs"
    result = subprocess.run([sys.executable, str(SUPPORT_DIR / "make_cert.py"), str(out)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert (out / "cert.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert "PRIVATE KEY" in (out / "key.pem").read_text()
    assert oct(os.stat(out / "key.pem").st_mode & 0o777) == "0o600"

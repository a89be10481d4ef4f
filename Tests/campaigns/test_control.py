"""`herald campaign pause|resume|cancel|watch`: a paused campaign waits while
transactional mail flows, cancel is visible row by row, watch follows progress."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time

import pytest

from helpers import herald_env, wait_until
from campaign_support import (
    addresses, assert_cli_error, campaign_config, campaign_entry, campaign_from_csv, campaign_rows, nonzero,
    one_line, recipients_in_order, report_json, run, start_worker, state_counts, stop_worker, wait_for_states,
)


def _campaign_mail(capture, prefix: str) -> list:
    return [r for r in recipients_in_order(capture) if r.startswith(prefix)]


def test_a_paused_campaign_waits_while_transactional_mail_flows_and_resume_sends_it(herald, capture, tmp_path, db):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "later", addresses("later", 5))
    one_line(run(herald, "campaign", "pause", str(cid), config=config))
    assert campaign_entry(herald, config, cid)["state"] == "paused"
    herald.send("reset-password", "urgent@x.test", config=config)

    worker = start_worker(herald, config)  # no --until-empty: paused rows stay pending
    wait_until(lambda: "urgent@x.test" in recipients_in_order(capture), 15, "the transactional email")
    time.sleep(1.0)
    assert recipients_in_order(capture) == ["urgent@x.test"], "a paused campaign sent mail"
    assert state_counts(db, cid) == {"queued": 5}

    one_line(run(herald, "campaign", "resume", str(cid), config=config))
    wait_until(lambda: len(_campaign_mail(capture, "later")) == 5, 15, "the resumed campaign's mail")
    wait_for_states(db, cid, {"sent": 5})
    stop_worker(worker)
    assert sorted(_campaign_mail(capture, "later")) == addresses("later", 5), "each recipient exactly once"
    assert campaign_entry(herald, config, cid)["state"] == "done"


def test_pausing_mid_campaign_stops_its_sends_until_resumed(herald, capture, tmp_path, db):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "midway", addresses("midway", 20), "--rate", "5/s")
    worker = start_worker(herald, config)
    wait_until(lambda: capture.received_count >= 3, 20, "the campaign to start sending")
    one_line(run(herald, "campaign", "pause", str(cid), config=config))
    time.sleep(0.5)  # sends already in flight may finish
    settled = capture.received_count
    time.sleep(1.5)
    assert capture.received_count == settled, f"{capture.received_count - settled} sent while paused"
    assert settled < 20
    assert state_counts(db, cid).get("sent") == settled

    one_line(run(herald, "campaign", "resume", str(cid), config=config))
    wait_for_states(db, cid, {"sent": 20})
    stop_worker(worker)
    assert sorted(recipients_in_order(capture)) == addresses("midway", 20), "each recipient exactly once"


def test_cancel_marks_every_queued_row_cancelled_and_sends_none(herald, capture, tmp_path, db):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "never", addresses("never", 6))
    keep = campaign_from_csv(herald, config, tmp_path, "kept", addresses("kept", 2))
    one_line(run(herald, "campaign", "cancel", str(cid), config=config))
    herald.worker_until_empty(config)  # cancelled rows are not pending

    assert sorted(recipients_in_order(capture)) == addresses("kept", 2)
    assert state_counts(db, cid) == {"cancelled": 6}
    assert all(row["sent_at"] is None for row in campaign_rows(db, cid))
    visible = sorted(m["recipient"] for m in herald.messages(config, state="cancelled"))
    assert visible == addresses("never", 6), "cancelled rows must be listed by `herald messages`"
    entry = campaign_entry(herald, config, cid)
    assert entry["state"] == "cancelled" and nonzero(entry["counts"]) == {"cancelled": 6}, entry
    report = report_json(herald, config, cid)
    assert nonzero(report["counts"]) == {"cancelled": 6}, report["counts"]
    assert report["sent"] == 0 and report["redemptionRate"] == 0, "nothing sent: the rate is 0, not NaN or null"
    assert campaign_entry(herald, config, keep)["state"] == "done"


def test_cancel_mid_campaign_leaves_the_sent_rows_sent(herald, capture, tmp_path, db):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "cut", addresses("cut", 20), "--rate", "5/s")
    worker = start_worker(herald, config, "--until-empty")
    wait_until(lambda: capture.received_count >= 3, 20, "the campaign to start sending")
    one_line(run(herald, "campaign", "cancel", str(cid), config=config))
    code = worker.wait(30)  # nothing of the campaign is pending any more
    assert code == 0

    counts = state_counts(db, cid)
    received = recipients_in_order(capture)
    assert set(counts) <= {"sent", "cancelled"}, counts
    assert counts.get("sent", 0) == len(received) >= 3, (counts, received)
    assert counts.get("cancelled", 0) >= 10 and counts["sent"] + counts["cancelled"] == 20, counts
    rows = campaign_rows(db, cid)
    assert {r["recipient"] for r in rows if r["state"] == "sent"} == set(received)
    assert all(r["sent_at"] is not None for r in rows if r["state"] == "sent")
    assert nonzero(report_json(herald, config, cid)["counts"]) == counts


@pytest.mark.parametrize("verb", ["pause", "resume", "cancel", "report", "watch"])
def test_an_unknown_campaign_id_is_an_error(herald, tmp_path, verb):
    config = campaign_config(tmp_path)
    campaign_from_csv(herald, config, tmp_path, "exists", ["someone@x.test"])
    args = ("campaign", verb, "9999")
    result = run(herald, *args, config=config, check=False, timeout=20)
    assert_cli_error(args, result, "9999", status=3)  # not found


# --------------------------------------------------------------------------- watch
WATCH_LINE = r"^campaign {id}: sent (\d+)/(\d+) \((\d+)%\), deferred (\d+), failed (\d+), ([\d.]+) msg/s, ETA \S+"


def test_watch_prints_plain_progress_lines_when_piped_and_exits_when_done(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "watched", addresses("watched", 15), "--rate", "5/s")  # ~3 s
    worker = start_worker(herald, config, "--until-empty")
    result = run(herald, "campaign", "watch", str(cid), "--interval", "1", config=config, timeout=60)
    stop_worker(worker, timeout=30)

    assert "\r" not in result.stdout and "\x1b[" not in result.stdout, "no terminal control codes when piped"
    pattern = re.compile(WATCH_LINE.format(id=cid))
    progress = [m for m in map(pattern.match, result.stdout.splitlines()) if m]
    assert len(progress) >= 2, \
        f"a ~3 s campaign watched every 1 s needs >= 2 lines like `campaign {cid}: sent 10/40 (25%), …`:\n{result.stdout}"
    sent = [int(m.group(1)) for m in progress]
    assert sent == sorted(sent), f"sent went backwards: {sent}"
    assert {int(m.group(2)) for m in progress} == {15}
    last = progress[-1]
    assert (last.group(1), last.group(3)) == ("15", "100"), f"the last line must show the finished state: {last.group(0)}"


def test_watch_of_a_finished_campaign_prints_once_and_exits(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "over", addresses("over", 3))
    herald.worker_until_empty(config)
    result = run(herald, "campaign", "watch", str(cid), "--interval", "1", config=config, timeout=15)
    progress = [line for line in result.stdout.splitlines() if re.match(WATCH_LINE.format(id=cid), line)]
    assert progress and "sent 3/3 (100%)" in progress[-1], result.stdout


def test_watch_draws_a_progress_bar_on_a_terminal(herald, capture, tmp_path):
    config = campaign_config(tmp_path, capture)
    cid = campaign_from_csv(herald, config, tmp_path, "tty", addresses("tty", 8), "--rate", "4/s")  # ~2 s
    worker = start_worker(herald, config, "--until-empty")
    master, slave = pty.openpty()
    argv = herald.argv(("campaign", "watch", str(cid), "--interval", "1"), config)
    proc = subprocess.Popen(argv, cwd=tmp_path, env=herald_env({"TERM": "xterm-256color", "COLUMNS": "100"}),
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    output, deadline = b"", time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the terminal's other side is closed
                    break
                if not chunk:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    stop_worker(worker, timeout=30)
    text = output.decode("utf-8", "replace")
    assert code == 0, f"watch on a terminal exited {code}:\n{text}"
    assert "\r" in text.replace("\r\n", "") or "\x1b[" in text, f"no progress bar redrawn in place:\n{text!r}"
    assert "8/8" in text and "100%" in text, f"the bar must end at 8/8 (100%):\n{text!r}"

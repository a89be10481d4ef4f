"""An idle `herald serve` polls its queue slowly (`worker.pollInterval`) but sends what its own API queued at
once: the API signals the embedded worker after the commit. Measured against a 20 s poll interval, so only the
signal can explain a delivery within a few seconds."""

from __future__ import annotations

import time

from http_support import ok, unique_email

SLOW_POLL = "20s"


def test_mail_queued_by_the_api_is_sent_at_once_while_the_idle_worker_polls_slowly(server):
    srv = server(worker={"pollInterval": SLOW_POLL})
    time.sleep(1.5)  # the worker's first (empty) claim is behind it: the next poll is 20 s away
    for round_ in range(2):  # twice: the signal works again after the worker went idle
        email = unique_email(f"signal{round_}")
        srv.sign_up(email, "correct-horse-battery")
        started = time.monotonic()
        ok(srv.send_oob("PASSWORD_RESET", email))
        srv.mail_to(email, timeout=5)
        assert time.monotonic() - started < 5
        time.sleep(1)

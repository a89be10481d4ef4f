"""The sign-in form and the overview's worker check, each against a server of its own.

Guessing the admin token through the console's sign-in form: wrong tokens count against the client's network
like failed password sign-ins (`limits.ipSignInFailuresPerHour`, in one count with wrong bearer tokens), and once
the network is locked out wrong tokens get 429; the right token still signs in, so guessing from a network never
locks the operator out."""

from __future__ import annotations

import pytest

from helpers import CaptureServer, deep_merge
from http_support import ADMIN_TOKEN, BASE_OVERRIDES, HeraldServer, write_serve_config
from console_support import CSRF_COOKIE, SESSION_COOKIE, ConsoleClient, set_cookies, show

FAILURES_ALLOWED = 3


def running(herald_bin, tmp_path, settings: dict, args: tuple = ()):
    """A `herald serve` with its own capture server, stopped (with the capture server) when the test ends."""
    capture = CaptureServer()
    capture.start()
    srv = HeraldServer(herald_bin, write_serve_config(tmp_path, capture, settings), tmp_path, capture, args, settings)
    try:
        yield srv.wait_ready()
    finally:
        srv.stop()
        capture.stop()


@pytest.fixture
def strict_server(herald_bin, tmp_path):
    yield from running(herald_bin, tmp_path, deep_merge(BASE_OVERRIDES, {"limits": {"ipSignInFailuresPerHour": FAILURES_ALLOWED}}))


def test_wrong_tokens_lock_the_network_out_of_the_sign_in_form(strict_server):
    client = ConsoleClient(strict_server)

    def attempt(token: str):
        form = client.sign_in_form()
        return client.post("/admin/sign-in", {"token": token, "csrf": form.field},
                           cookies={CSRF_COOKIE: form.cookie.value})

    for _ in range(FAILURES_ALLOWED):
        resp = attempt("not-the-token")
        assert resp.status_code == 401, show(resp)
    locked = attempt("not-the-token-either")
    assert locked.status_code == 429, show(locked)
    assert SESSION_COOKIE not in set_cookies(locked), "a wrong token never gets a session"
    assert 'id="error"' in locked.text
    # Wrong bearer tokens count in the same bucket: it is still locked.
    assert strict_server.admin("accounts:lookup", {"email": ["x@example.com"]}, token="guess").status_code == 429
    # The right token signs in from the locked-out network.
    signed_in = attempt(ADMIN_TOKEN)
    assert signed_in.status_code == 303, show(signed_in)
    assert SESSION_COOKIE in set_cookies(signed_in)


@pytest.fixture
def workerless_server(herald_bin, tmp_path):
    yield from running(herald_bin, tmp_path, BASE_OVERRIDES, ("--no-worker",))


def test_the_overview_warns_when_mail_waits_and_no_worker_is_alive(workerless_server):
    """The on-call engineer's first question: is anything sending? `herald serve --no-worker` and a queued reset."""
    workerless_server.sign_up("nobody-sends@example.com", "correct-horse-battery")
    resp = workerless_server.send_oob("PASSWORD_RESET", "nobody-sends@example.com")
    assert resp.status_code == 200, show(resp)
    client = ConsoleClient(workerless_server)
    doc = client.page("/admin/", client.sign_in())
    assert doc.select("table#workers tr[data-worker]") == [], "no worker registered"
    warning = doc.select_one("p#error")
    assert warning is not None and "no worker is alive" in warning.text, doc
    assert doc.select_one("p#pending").text.startswith("1 waiting"), doc.select_one("p#pending")

"""The action pages in a real browser: after a reset, a verification or an email change, the page's 303 to
a continue URL on another origin must be followed. Chromium applies the page's CSP `form-action` to the
redirect that answers the form, so a policy of `'self'` alone left the user on the form with the password
already changed. Headless Chromium through chromedriver (Debian's chromium-driver), as Tests/console does."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from helpers import action_link
from http_support import unique_email
from suites import chromium_driver

PASSWORD = "browser-password-1"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    """An app's page on another origin than Herald's (http://localhost:<port>/done.html; Herald is on 127.0.0.1,
    and `localhost` is an authorized domain)."""
    root = tmp_path_factory.mktemp("landing")
    (root / "done.html").write_text("<!doctype html><title>done</title><p id=landed>landed</p>", encoding="utf-8")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{httpd.server_address[1]}/done.html"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def driver():
    browser = chromium_driver()
    yield browser
    browser.quit()


def submit_and_land(driver, srv, link: str, landing: str, new_password: str | None = None) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(srv.local(link))
    if new_password is not None:
        driver.find_element(By.NAME, "newPassword").send_keys(new_password)
    driver.find_element(By.CSS_SELECTOR, "form button, form input[type=submit]").click()
    try:
        WebDriverWait(driver, 10).until(lambda d: d.current_url.startswith(landing))
    except Exception:  # noqa: BLE001 - say where the browser stayed
        pytest.fail(f"the browser stayed on {driver.current_url} instead of going on to {landing}", pytrace=False)
    assert driver.find_element(By.ID, "landed").text == "landed"


def test_a_reset_goes_on_to_a_continue_url_on_another_origin(server, driver, landing):
    srv = server()
    email = unique_email("browser-reset")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("PASSWORD_RESET", email, continueUrl=landing)["oobLink"]
    submit_and_land(driver, srv, link, landing, new_password="a-new-password-3")
    assert srv.sign_in(email, "a-new-password-3").status_code == 200


def test_a_verification_goes_on_to_a_continue_url_on_another_origin(server, driver, landing):
    srv = server()
    email = unique_email("browser-verify")
    srv.sign_up(email, PASSWORD)
    link = srv.oob("VERIFY_EMAIL", email, continueUrl=landing)["oobLink"]
    submit_and_land(driver, srv, link, landing)
    assert srv.admin_user(email)["emailVerified"] is True


def test_an_email_change_goes_on_to_a_continue_url_on_another_origin(server, driver, landing):
    srv = server()
    old, new = unique_email("browser-old"), unique_email("browser-new")
    account = srv.sign_up(old, PASSWORD)
    assert srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=new,
                        continueUrl=landing).status_code == 200
    [mail] = srv.mail_to(new)
    submit_and_land(driver, srv, action_link(mail["message"]), landing)
    assert srv.admin_user(new)["localId"] == account["localId"]

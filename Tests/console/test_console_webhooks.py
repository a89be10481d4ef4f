"""The console's webhooks page against a server of its own whose one endpoint (`crm`, a loopback receiver) answers
503: the backlog and the failing answer are on the page, a dead delivery is replayed from it (with the CSRF token,
refused without), and the page fits a phone's width in Chromium."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from helpers import query, wait_until
from http_support import ADMIN_TOKEN
from console_support import NAV_LINKS, assert_rendered, hidden_value, parse_html, serve_console, show
from webhook_receiver import SECRET, Receiver

WEBHOOKS = "/admin/console/webhooks"


@pytest.fixture(scope="module")
def receiver():
    answering = Receiver(SECRET, status=503).start()
    yield answering
    answering.stop()


@pytest.fixture(scope="module")
def console_server(herald_bin, tmp_path_factory, receiver):
    """Two attempts per delivery, 4-8 s apart: a failed delivery waits queued long enough to be seen, then dies."""
    hooks = {"maxAttempts": 2, "backoffBase": "8s", "backoffCap": "8s",
             "crm": {"url": receiver.url, "secret": SECRET, "events": ["sent"]}}
    yield from serve_console(herald_bin, tmp_path_factory, {"webhooks": hooks})


def deliveries(srv) -> list:
    return query(srv.db_path, "SELECT * FROM webhook_deliveries WHERE endpoint = 'crm' ORDER BY id")


def test_a_failing_endpoint_shows_its_backlog_and_answer_and_a_dead_delivery_is_replayed(client, session, ledger, receiver):
    srv = ledger.srv
    ledger.delivered("hooks", 3)
    wait_until(lambda: len(deliveries(srv)) >= 3 and any(d["last_error"] for d in deliveries(srv)), 20,
               "a failed POST to crm recorded")
    doc = client.page(WEBHOOKS, session)
    row = doc.one("table#webhooks tr[data-endpoint=crm]")
    assert row.one("td.url").text == receiver.url
    assert int(row.one("td.queued").text) >= 2, row.text
    assert "HTTP 503" in row.one("td.last-error").text, row.text
    warning = doc.one("p.error[data-endpoint=crm]")
    assert "deliveries wait" in warning.text and "503" in warning.text, warning.text
    failed = doc.select("table#webhook-failures tr[data-endpoint=crm]")
    assert failed and failed[0].one("td.status").text == "503", [f.text for f in failed]
    assert "HTTP 503" in failed[0].one("td.answer").text

    wait_until(lambda: any(d["state"] == "dead" for d in deliveries(srv)), 30, "a crm delivery out of attempts")
    dead = next(d for d in deliveries(srv) if d["state"] == "dead")
    doc = client.page(WEBHOOKS, session)
    tr = doc.one(f"table#webhook-failures tr#delivery-{dead['id']}")
    assert tr.one("td.state").text == "dead" and tr.one("td.status").text == "503", tr.text
    form = doc.one("table#webhooks tr[data-endpoint=crm]").one("form")
    assert form.get("action") == f"{WEBHOOKS}/replay" and form.get("method", "").lower() == "post"
    fields = {"endpoint": hidden_value(form, "endpoint"), "state": hidden_value(form, "state")}
    assert fields == {"endpoint": "crm", "state": "dead"} and hidden_value(form, "csrf") == session.csrf

    for data in (fields, {**fields, "csrf": "0" * len(session.csrf)}):
        resp = client.post(f"{WEBHOOKS}/replay", data, session)
        assert resp.status_code == 403 and parse_html(resp.text).select_one("p#error") is not None, show(resp)
    assert next(d for d in deliveries(srv) if d["id"] == dead["id"])["state"] == "dead", "a refused replay changed it"
    bad = client.post(f"{WEBHOOKS}/replay", {"state": "lost", "csrf": session.csrf}, session)
    assert bad.status_code == 400 and parse_html(bad.text).select_one("p#error") is not None, show(bad)

    receiver.status = 200
    resp = client.post(f"{WEBHOOKS}/replay", {**fields, "csrf": session.csrf}, session)
    assert urlsplit(client.location(resp)).path == WEBHOOKS, show(resp)
    notice = parse_html(client.follow(resp, session).text).one("p#notice").text
    assert "queued again" in notice and not notice.startswith("0 "), notice
    wait_until(lambda: next(d for d in deliveries(srv) if d["id"] == dead["id"])["state"] == "delivered", 30,
               f"the replayed delivery {dead['id']} delivered")
    wait_until(lambda: dead["event_id"] in {e["id"] for e in receiver.of_type("sent")}, 10, "the replayed event received")
    # One delivery by its id, from the failures table's button: any state, here a delivered one.
    resp = client.post(f"{WEBHOOKS}/replay", {"id": str(dead["id"]), "state": "any", "csrf": session.csrf}, session)
    assert "1 delivery queued again" in parse_html(client.follow(resp, session).text).one("p#notice").text


@pytest.mark.parametrize("width", (1400, 390))
def test_the_webhooks_page_fits_the_width_in_the_browser(driver, console_server, ledger, tmp_path, width):
    wait_until(lambda: deliveries(console_server), 20, "a crm delivery to show")
    driver.get(console_server.url + "/admin/sign-in")
    WebDriverWait(driver, 15).until(lambda d: d.find_element(By.CSS_SELECTOR, "input#token"))
    driver.find_element(By.CSS_SELECTOR, "input#token").send_keys(ADMIN_TOKEN)
    driver.find_element(By.CSS_SELECTOR, "button#sign-in-button").click()
    WebDriverWait(driver, 15).until(lambda d: urlsplit(d.current_url).path == "/admin/")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
    try:
        driver.find_element(By.CSS_SELECTOR, "nav#nav a#nav-webhooks").click()
        WebDriverWait(driver, 15).until(lambda d: d.find_element(By.CSS_SELECTOR, "table#webhooks"))
        got = driver.execute_script("return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth};")
        assert got["inner"] == width and got["scroll"] <= got["inner"], f"the webhooks page at {width} px: {got}"
        path = tmp_path / f"webhooks-{width}.png"
        assert driver.save_screenshot(str(path))
        assert_rendered(driver, path)
        for link_id in NAV_LINKS:
            assert driver.find_element(By.ID, link_id).is_displayed(), link_id
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

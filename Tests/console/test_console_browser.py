"""The `/admin` console in headless Chromium (Selenium): an operator signs in through the form, reads the
overview, finds a delivered message and its history, pauses/resumes/cancels a campaign, filters the audit
and exports it, previews the Persian (RTL) template, sends a test mail and signs out. Screenshots are
checked with Pillow: not blank, nav bar drawn, the RTL preview's text on the right."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from http_support import ADMIN_TOKEN, HTTP_TIMEOUT, unique_email
from campaign_support import AUDIT_FIELDS
from console_support import NAV_LINKS, SESSION_COOKIE, assert_rendered, ink_right_share

WAIT = 15  # seconds for any element or page change


def wait(driver, condition, what: str, timeout: float = WAIT):
    """WebDriverWait that re-runs `condition` through reloads (the campaigns page refreshes itself)."""
    return WebDriverWait(driver, timeout, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)) \
        .until(condition, f"timed out after {timeout}s waiting for {what} on {driver.current_url}")


def css(driver, selector: str, what: str = None):
    return wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, selector), what or selector)


def path_of(driver) -> str:
    return urlsplit(driver.current_url).path


def shot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"screenshot {name} failed"
    return path


def sign_in_through_the_form(driver, srv) -> None:
    driver.get(srv.url + "/admin/")
    css(driver, "form#sign-in", "the sign-in form")
    assert path_of(driver) == "/admin/sign-in", "an anonymous /admin/ must land on the sign-in page"
    driver.find_element(By.CSS_SELECTOR, "input#token").send_keys(ADMIN_TOKEN)
    driver.find_element(By.CSS_SELECTOR, "button#sign-in-button").click()
    wait(driver, lambda d: path_of(d) == "/admin/" and d.find_element(By.TAG_NAME, "h1").text == "Overview",
         "the overview after signing in")


@pytest.fixture
def console(driver, console_server):
    """The browser, signed in (through the form when it has no session yet)."""
    driver.get(console_server.url + "/admin/")
    if driver.get_cookie(SESSION_COOKIE) is None or path_of(driver) != "/admin/":
        driver.delete_all_cookies()
        sign_in_through_the_form(driver, console_server)
    return driver


def nav_to(driver, link_id: str, ready: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f"nav#nav a#{link_id}").click()
    css(driver, ready)


def test_signing_in_through_the_form_opens_the_overview_with_the_queue(driver, console_server, ledger, tmp_path):
    ledger.delivered("browserview", 2)
    driver.delete_all_cookies()
    sign_in_through_the_form(driver, console_server)
    cookie = driver.get_cookie(SESSION_COOKIE)
    assert cookie is not None, "no session cookie in the browser"
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/admin", cookie
    rows = driver.find_elements(By.CSS_SELECTOR, "table#queue tr[data-state]")
    states = {r.get_attribute("data-state"): int(r.find_element(By.CSS_SELECTOR, "td.count").text) for r in rows}
    assert states.get("sent", 0) >= 2, f"queue table {states}"
    for table in ("table#send-rate", "table#failures"):
        assert driver.find_element(By.CSS_SELECTOR, table).is_displayed(), table
    assert_rendered(driver, shot(driver, tmp_path, "overview"))


def test_a_delivered_message_is_found_by_email_and_its_history_shows_the_250(console, ledger, tmp_path):
    delivered = ledger.delivered("browsermsg", 2)
    nav_to(console, "nav-messages", "form#message-search")
    form = console.find_element(By.CSS_SELECTOR, "form#message-search")
    form.find_element(By.CSS_SELECTOR, "input[name=email]").send_keys(delivered.email)
    Select(form.find_element(By.CSS_SELECTOR, "select[name=state]")).select_by_value("sent")
    form.find_element(By.CSS_SELECTOR, "button#search").click()
    rows = wait(console, lambda d: len(d.find_elements(By.CSS_SELECTOR, "table#messages tr[id^='message-']")) == 2
                and d.find_elements(By.CSS_SELECTOR, "table#messages tr[id^='message-']"), "two result rows")
    assert [r.get_attribute("id") for r in rows] == [f"message-{i}" for i in sorted(delivered.ids, reverse=True)]
    for row in rows:
        assert row.find_element(By.CSS_SELECTOR, "td.recipient").text == delivered.email
        assert row.find_element(By.CSS_SELECTOR, "td.state").text == "sent"

    newest = max(delivered.ids)
    rows[0].find_element(By.CSS_SELECTOR, f"a[href='/admin/messages/{newest}']").click()
    css(console, "dl#message")
    assert path_of(console) == f"/admin/messages/{newest}"
    events = console.find_elements(By.CSS_SELECTOR, "table#history tr[data-event]")
    kinds = [e.get_attribute("data-event") for e in events]
    assert kinds[:2] == ["queued", "attempt"], kinds
    attempt = next(e for e in events if e.get_attribute("data-event") == "attempt")
    assert attempt.find_element(By.CSS_SELECTOR, "td.reply").text.startswith("250"), attempt.text
    assert_rendered(console, shot(console, tmp_path, "message-history"))


def test_a_campaign_is_paused_resumed_and_cancelled_from_the_campaigns_page(console, ledger, tmp_path):
    campaign = ledger.campaign("browsercamp", 3)
    row = f"tr#campaign-{campaign.id}"
    nav_to(console, "nav-campaigns", "table#campaigns")
    # It starts in an hour: scheduled, with its start.
    assert console.find_element(By.CSS_SELECTOR, f"{row} td.state").text == "scheduled"
    assert console.find_element(By.CSS_SELECTOR, f"{row} td.progress").text.startswith("0/3 sent starts ")
    assert console.find_element(By.CSS_SELECTOR, f"{row} a.report").get_attribute("href") \
        .endswith(f"/admin/campaigns/{campaign.id}")
    assert_rendered(console, shot(console, tmp_path, "campaigns"))

    shown_state = {"active": "scheduled", "paused": "paused", "cancelled": "cancelled"}
    for verb, state in (("pause", "paused"), ("resume", "active"), ("cancel", "cancelled")):
        css(console, f"{row} button.{verb}").click()
        if verb == "cancel":  # asked first: the confirm page's button does it
            css(console, "form#confirm-cancel button", "the cancel confirmation").click()
        wait(console, lambda d: d.find_element(By.CSS_SELECTOR, "p#notice").is_displayed()
             and d.find_element(By.CSS_SELECTOR, f"{row} td.state").text == shown_state[state], f"{state} and a notice")
        assert path_of(console) == "/admin/campaigns"
        assert ledger.campaign_state(campaign.id) == state, f"after {verb}"
    assert not console.find_elements(By.CSS_SELECTOR, f"{row} button"), "a cancelled campaign offers no action"


def test_the_audit_is_filtered_by_email_and_exported_as_csv_with_the_browsers_session(console, ledger, tmp_path):
    delivered = ledger.delivered("browseraudit", 2)
    nav_to(console, "nav-audit", "form#audit")
    console.find_element(By.CSS_SELECTOR, "form#audit [name=email]").send_keys(delivered.email)
    console.find_element(By.CSS_SELECTOR, "button#audit-search").click()
    rows = wait(console, lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "table#audit-rows tr")
                                    if r.find_elements(By.TAG_NAME, "td")] or None, "audit rows")
    assert len(rows) == 2 and all(delivered.email in r.text for r in rows), [r.text for r in rows]
    assert_rendered(console, shot(console, tmp_path, "audit"))

    cookie = console.get_cookie(SESSION_COOKIE)["value"]
    href = console.find_element(By.CSS_SELECTOR, "a#export-csv").get_attribute("href")
    exported = requests.get(href, headers={"Cookie": f"{SESSION_COOKIE}={cookie}"}, timeout=HTTP_TIMEOUT,
                            allow_redirects=False)
    assert exported.status_code == 200, f"GET {href} -> {exported.status_code}\n{exported.text[:500]}"
    assert exported.headers.get("Content-Type", "").startswith("text/csv"), exported.headers
    assert exported.headers.get("Content-Disposition", "").lower().startswith("attachment"), exported.headers
    reader = csv.DictReader(io.StringIO(exported.text, newline=""))
    assert reader.fieldnames == AUDIT_FIELDS, reader.fieldnames
    got = list(reader)
    assert sorted(int(r["id"]) for r in got) == delivered.ids and {r["recipient"] for r in got} == {delivered.email}

    href = console.find_element(By.CSS_SELECTOR, "a#export-jsonl").get_attribute("href")
    lines = requests.get(href, headers={"Cookie": f"{SESSION_COOKIE}={cookie}"}, timeout=HTTP_TIMEOUT,
                         allow_redirects=False)
    assert lines.status_code == 200, f"GET {href} -> {lines.status_code}\n{lines.text[:500]}"
    assert sorted(int(json.loads(line)["id"]) for line in lines.text.splitlines() if line.strip()) == delivered.ids


def _preview_ink(console, tmp_path: Path, locale: str) -> float:
    """Open reset-password/<locale> from the templates list; the share of the preview frame's ink on its right."""
    console.get(console.current_url.split("/admin/")[0] + "/admin/")
    nav_to(console, "nav-templates", "table#templates")
    css(console, f"table#templates tr[data-action=reset-password][data-locale={locale}] a").click()
    frame = css(console, "iframe#preview")
    assert path_of(console) == f"/admin/templates/reset-password/{locale}"
    assert urlsplit(frame.get_attribute("src")).path == f"/admin/templates/reset-password/{locale}/html"
    console.switch_to.frame(frame)
    try:
        wait(console, lambda d: d.execute_script("return document.readyState") == "complete"
             and d.find_elements(By.TAG_NAME, "p"), "the preview's paragraphs")
        direction = console.execute_script("return getComputedStyle(document.body).direction")
        root = console.find_element(By.TAG_NAME, "html")
        attrs = (root.get_attribute("dir"), root.get_attribute("lang"))
    finally:
        console.switch_to.default_content()
    expected = ("rtl", "fa") if locale == "fa" else ("ltr", locale)
    assert direction == expected[0], f"{locale}: the body's computed direction is {direction}"
    if locale == "fa":
        assert attrs == expected, f"fa preview <html dir lang> = {attrs}"
        assert "بازنشانی رمز عبور" in console.find_element(By.CSS_SELECTOR, "#subject").text
        assert_rendered(console, shot(console, tmp_path, "fa-preview"))
    frame = console.find_element(By.CSS_SELECTOR, "iframe#preview")
    path = tmp_path / f"{locale}-frame.png"
    assert frame.screenshot(str(path)), "frame screenshot failed"
    return ink_right_share(path)


def test_the_persian_reset_password_preview_is_right_to_left(console, tmp_path):
    fa = _preview_ink(console, tmp_path, "fa")
    en = _preview_ink(console, tmp_path, "en")
    assert fa > 0.5, f"only {fa:.0%} of the fa preview's text is on the right half"
    assert en < 0.5 < fa, f"en {en:.0%} vs fa {fa:.0%} of the text on the right: fa must sit right, en left"


def test_a_test_mail_sent_from_the_templates_page_arrives(console, console_server):
    email = unique_email("browsertest")
    nav_to(console, "nav-templates", "table#templates")
    css(console, "table#templates tr[data-action=reset-password][data-locale=en] a").click()
    subject = css(console, "#subject").text
    console.find_element(By.CSS_SELECTOR, "form#send-test input[name=email]").send_keys(email)
    console.find_element(By.CSS_SELECTOR, "button#send-test-button").click()
    notice = wait(console, lambda d: d.find_element(By.CSS_SELECTOR, "p#notice"), "the send notice")
    assert "250" in notice.text, notice.text
    message = console_server.mail_to(email)[0]["message"]
    assert str(message["Subject"]) == subject


# =========================================================================== widths
WIDTHS = (1400, 390)
SUPPRESSIONS = "/admin/console/suppressions"


def set_width(driver, width: int) -> None:
    """A viewport `width` CSS px wide: at 390, a phone (mobile emulation: the viewport meta applies, and a page wider
    than the screen would widen the layout viewport, which the checks below catch)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})


def overflow(driver) -> dict:
    return driver.execute_script(
        "const nav = document.querySelector('nav#nav');"
        "const right = nav ? Math.max(...[...nav.querySelectorAll('a, button')].map(e => e.getBoundingClientRect().right))"
        " : 0;"
        "return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,"
        " body: document.body.scrollWidth, navRight: right};")


def assert_fits(driver, url: str, width: int, ready: str = "h1") -> dict:
    """Opens `url` at the viewport `width` set by set_width and asserts the page does not scroll sideways."""
    driver.get(url)
    css(driver, ready)
    got = overflow(driver)
    assert got["inner"] == width, f"{url}: the viewport is {got['inner']} px wide, not {width} (page too wide?)"
    assert got["scroll"] <= got["inner"], f"{url} at {width} px scrolls sideways: {got}"
    return got


def console_pages(ledger) -> list:
    """Every console page, old and new, with content in it (tables with rows, long addresses)."""
    delivered = ledger.delivered("widthsmessage-with-a-rather-long-local-part", 1)
    campaign = ledger.campaign("widthscamp", 2)
    return [
        "/admin/sign-in", "/admin/", "/admin/?window=24h", "/admin/campaigns", f"/admin/campaigns/{campaign.id}",
        "/admin/campaigns/new", f"/admin/campaigns/{campaign.id}/review", "/admin/messages",
        f"/admin/messages/{delivered.ids[0]}", f"/admin/messages?email={delivered.email}", "/admin/audit/search",
        "/admin/templates", "/admin/templates/reset-password/en", "/admin/templates/reset-password/fa",
        SUPPRESSIONS, f"{SUPPRESSIONS}?email={delivered.email}", "/admin/console/webhooks", "/admin/console/activity",
        "/admin/messages?email=a@x.test&email=b@x.test",  # an error page
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_console_page_fits_the_width_without_horizontal_scrolling(console, console_server, ledger, tmp_path, width):
    """At 1,400 px and at a 390 px phone, no page scrolls sideways (document.documentElement.scrollWidth <=
    window.innerWidth): the navigation wraps with every link on screen, wide tables scroll inside themselves."""
    requests.post(console_server.url + "/admin/suppressions", timeout=HTTP_TIMEOUT,
                  headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                  json={"emails": [unique_email("widths-long-address-to-wrap")],
                        "detail": "a note " * 30}).raise_for_status()
    pages = console_pages(ledger)
    set_width(console, width)
    try:
        for index, path in enumerate(pages):
            got = assert_fits(console, console_server.url + path, width)
            if path != "/admin/sign-in":
                assert got["navRight"] <= width, f"{path} at {width} px: navigation cut off at {got['navRight']}"
                for link_id in NAV_LINKS:
                    assert console.find_element(By.ID, link_id).is_displayed(), f"{path}: a#{link_id} hidden"
            name = f"w{width}-{index}"
            assert_rendered(console, shot(console, tmp_path, name), with_nav=path != "/admin/sign-in")
        # A wide table is its own scroll box at the phone's width, not the page's.
        console.get(console_server.url + "/admin/audit/search")
        box = console.execute_script(
            "const t = document.querySelector('table#audit-rows');"
            "return t && {scroll: t.scrollWidth, client: t.clientWidth, overflow: getComputedStyle(t).overflowX};")
        assert box, "the audit page has no rows to show"
        if width == 390:
            assert box["scroll"] > box["client"] and box["overflow"] == "auto", box
    finally:
        console.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# =========================================================================== suppressions
def test_an_address_is_suppressed_found_and_removed_in_the_browser(console, console_server, ledger, tmp_path):
    email = unique_email("browsersupp")
    nav_to(console, "nav-suppressions", "form#suppression-add")
    assert path_of(console) == SUPPRESSIONS
    form = console.find_element(By.CSS_SELECTOR, "form#suppression-add")
    form.find_element(By.CSS_SELECTOR, "textarea[name=emails]").send_keys(email)
    Select(form.find_element(By.CSS_SELECTOR, "select[name=reason]")).select_by_value("unsubscribe")
    form.find_element(By.CSS_SELECTOR, "input[name=detail]").send_keys("by phone")
    form.find_element(By.CSS_SELECTOR, "button#suppression-add-button").click()
    notice = wait(console, lambda d: d.find_element(By.CSS_SELECTOR, "p#notice"), "the added notice")
    assert "Suppressed 1" in notice.text, notice.text
    api = requests.get(f"{console_server.url}/admin/suppressions/{email}", timeout=HTTP_TIMEOUT,
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert api.status_code == 200 and (api.json()["reason"], api.json()["scope"]) == ("unsubscribe", "campaigns"), api.text

    search = console.find_element(By.CSS_SELECTOR, "form#suppression-search")
    search.find_element(By.CSS_SELECTOR, "input[name=email]").send_keys(email)
    search.find_element(By.CSS_SELECTOR, "button#suppression-search-button").click()
    row = css(console, f"table#suppressions tr[data-email='{email}']", "the found address")
    assert row.find_element(By.CSS_SELECTOR, "td.scope").text == "campaigns"
    assert len(console.find_elements(By.CSS_SELECTOR, "table#suppressions tr[data-email]")) == 1
    assert_rendered(console, shot(console, tmp_path, "suppressions"))
    row.find_element(By.CSS_SELECTOR, "button.remove").click()
    notice = wait(console, lambda d: d.find_element(By.CSS_SELECTOR, "p#notice"), "the removed notice")
    assert notice.text.startswith("Removed"), notice.text
    api = requests.get(f"{console_server.url}/admin/suppressions/{email}", timeout=HTTP_TIMEOUT,
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert api.status_code == 404, api.text


def test_signing_out_returns_to_sign_in_and_locks_the_console(console, console_server):
    css(console, "form#sign-out button, form#sign-out input[type=submit]").click()
    wait(console, lambda d: path_of(d) == "/admin/sign-in" and d.find_element(By.CSS_SELECTOR, "form#sign-in"),
         "the sign-in page after signing out")
    assert console.get_cookie(SESSION_COOKIE) is None, "the session cookie survived signing out"
    console.get(console_server.url + "/admin/")
    css(console, "form#sign-in")
    assert path_of(console) == "/admin/sign-in"

"""The JS SDK's popup and redirect sign-in (`signInWithPopup`, `signInWithRedirect`, `linkWithPopup`) against
`herald serve`, in headless Chromium.

`web_app/sdk-flows.html` is a web app doing what the Firebase JS SDK does under `connectAuthEmulator`: it opens
Herald's helper iframe (`/emulator/auth/iframe`) through gapi.iframes (Herald's `herald-gapi.js`: this machine
cannot reach apis.google.com), opens the handler (`/emulator/auth/handler`) with the SDK's query in a popup or
by a redirect, takes the `authEvent` the iframe sends, and presents its `urlResponse` and `sessionId` to
`accounts:signInWithIdp`. The providers are Herald's emulator-mode chooser and the real protocol peers of
idp_peers.py (an OIDC issuer's authorization-code flow, Twitter's OAuth 1.0a).

The app is served on http://localhost:<port>; Herald is reached as http://localhost:<its port>, as an app under
`connectAuthEmulator(auth, "http://localhost:9099")` reaches it. The last test drives the real SDK when a copy
of it is present (HERALD_FIREBASE_JS_SDK), and says so when it is not."""

from __future__ import annotations

import functools
import http.server
import json
import os
import threading
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests

from http_support import API_KEY, HTTP_TIMEOUT, assert_error, ok, unique_email
from suites import chromium_driver

WEB_APP = Path(__file__).parent / "web_app"
WAIT = 20


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def app_origin():
    """The web app's origin, http://localhost:<port> (`localhost` is an authorized domain)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(WEB_APP)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://localhost:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def driver():
    browser = chromium_driver()
    yield browser
    browser.quit()


def herald_url(srv) -> str:
    return srv.url.replace("127.0.0.1", "localhost")


def open_app(driver, app_origin: str, srv, **params) -> None:
    query = urlencode({"herald": herald_url(srv), "apiKey": API_KEY, "gapi": "herald", **params})
    driver.get(f"{app_origin}/sdk-flows.html?{query}")
    wait_for(driver, "window.iframeReady === true", "the helper iframe answered the page's ping")


def wait_for(driver, script: str, what: str, timeout: float = WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {script}"))
    except Exception:  # noqa: BLE001 - say what the page shows
        pytest.fail(f"{what}: not within {timeout}s; the page at {driver.current_url} shows "
                    f"{driver.execute_script('return document.body.innerText')[:1500]!r}; "
                    f"events {driver.execute_script('return window.events || null')!r}", pytrace=False)


def result(driver) -> dict:
    wait_for(driver, "window.results && window.results.length > 0", "the page got the sign-in's answer")
    return driver.execute_script("return window.results[window.results.length - 1]")


def start_popup(driver):
    """Clicks the app's button and switches to the popup it opened; returns the app's window handle."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    main = driver.current_window_handle
    driver.find_element(By.ID, "start").click()
    WebDriverWait(driver, WAIT).until(lambda d: len(d.window_handles) > 1)
    driver.switch_to.window([h for h in driver.window_handles if h != main][0])
    return main


def finish_popup(driver, main) -> dict:
    """Back to the app's window once the popup has handed the event on; the app's answer."""
    driver.switch_to.window(main)
    return result(driver)


def oidc_server(server, issuer, **settings):
    provider = {**issuer.herald_provider(), "authorizationUrl": issuer.base_url + "/authorize",
                "tokenUrl": issuer.base_url + "/token", "clientSecret": issuer.client_secret}
    return server(providers={"oidc": {"acme": provider}}, **settings)


# --------------------------------------------------------------------------- emulator mode: the account chooser
def test_emulator_popup_signs_in_with_a_new_account_then_picks_it_again(server, driver, app_origin):
    from selenium.webdriver.common.by import By

    srv = server(server={"emulatorMode": True})
    email = unique_email("popup-emulator")
    open_app(driver, app_origin, srv, provider="google.com")
    main = start_popup(driver)
    driver.find_element(By.ID, "sub").send_keys("popup-google-1")
    driver.find_element(By.ID, "email").send_keys(email)
    driver.find_element(By.ID, "name").send_keys("Ada Popup")
    driver.find_element(By.CSS_SELECTOR, "form:last-of-type button").click()
    body = finish_popup(driver, main)
    assert body.get("idToken") and body["providerId"] == "google.com", body
    assert body["email"] == email and body["isNewUser"] is True, body
    assert body["federatedId"] == "https://accounts.google.com/popup-google-1", body
    first_uid = body["localId"]
    assert driver.execute_script("return window.webStorageSupport") is True

    # Again: the chooser lists the account, and picking it signs in to the same user.
    open_app(driver, app_origin, srv, provider="google.com")
    main = start_popup(driver)
    driver.find_element(By.CSS_SELECTOR, "button.account").click()
    again = finish_popup(driver, main)
    assert again["localId"] == first_uid and again.get("isNewUser") is not True, again


def test_emulator_redirect_returns_the_credential_to_the_page(server, driver, app_origin):
    from selenium.webdriver.common.by import By

    srv = server(server={"emulatorMode": True})
    email = unique_email("redirect-emulator")
    open_app(driver, app_origin, srv, provider="oidc.acme", flow="redirect")
    driver.find_element(By.ID, "start").click()
    wait_for(driver, "!!document.getElementById('sub')", "the handler showed the chooser")
    driver.find_element(By.ID, "sub").send_keys("redirect-1")
    driver.find_element(By.ID, "email").send_keys(email)
    driver.find_element(By.CSS_SELECTOR, "form:last-of-type button").click()
    wait_for(driver, "location.pathname === '/sdk-flows.html' && window.iframeReady === true",
             "the browser returned to the app")
    body = result(driver)
    assert body.get("idToken") and body["providerId"] == "oidc.acme" and body["email"] == email, body
    # The event was taken once: a reload finds none (the SDK's getRedirectResult then answers null).
    driver.refresh()
    wait_for(driver, "window.iframeReady === true && window.events.length > 0", "the iframe sent the page its event")
    events = driver.execute_script("return window.events")
    assert events[-1]["type"] == "unknown" and events[-1]["error"]["code"] == "auth/no-auth-event", events


# --------------------------------------------------------------------------- real providers
def test_oidc_popup_signs_in_through_the_providers_authorization_code_flow(server, driver, app_origin, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("popup-oidc")
    oidc_issuer.approve_as = {"sub": "oidc-popup-1", "email": email, "email_verified": True, "name": "Grace"}
    open_app(driver, app_origin, srv, provider="oidc.acme", scopes="calendar.read")
    main = start_popup(driver)
    body = finish_popup(driver, main)
    assert body.get("idToken") and body["providerId"] == "oidc.acme" and body["federatedId"] == "oidc-popup-1", body
    assert body["email"] == email and body["oauthIdToken"], body
    assert oidc_issuer.authorizations[-1]["scope"].split() == ["openid", "email", "profile", "calendar.read"]

    # The event cannot be presented again, by the page or by anyone who saw it.
    event = driver.execute_script("return window.events.filter(function (e) { return e.urlResponse; }).pop()")
    again = requests.post(f"{srv.url}/identitytoolkit.googleapis.com/v1/accounts:signInWithIdp", params={"key": API_KEY},
                          json={"requestUri": event["urlResponse"], "sessionId": event["sessionId"],
                                "postBody": event["postBody"], "returnSecureToken": True}, timeout=HTTP_TIMEOUT)
    assert_error(again, "INVALID_IDP_RESPONSE")


def test_oidc_redirect_returns_to_the_page_with_the_credential(server, driver, app_origin, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("redirect-oidc")
    oidc_issuer.approve_as = {"sub": "oidc-redirect-1", "email": email, "email_verified": True}
    open_app(driver, app_origin, srv, provider="oidc.acme", flow="redirect")
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "start").click()
    wait_for(driver, "location.pathname === '/sdk-flows.html' && window.iframeReady === true",
             "the browser returned to the app")
    body = result(driver)
    assert body.get("idToken") and body["federatedId"] == "oidc-redirect-1" and body["email"] == email, body


def test_a_refusal_at_the_provider_reaches_the_page_as_the_sdks_error(server, driver, app_origin, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    oidc_issuer.approve_as = "deny"
    open_app(driver, app_origin, srv, provider="oidc.acme")
    main = start_popup(driver)
    body = finish_popup(driver, main)
    assert body.get("error") == "auth/web-context-cancelled", body


def test_twitter_popup_signs_in_with_oauth1(server, driver, app_origin, oauth1_provider):
    srv = server(providers={"twitter": oauth1_provider.herald_provider()})
    account = oauth1_provider.add_user(name="Pop Per", screen_name="popper", email=unique_email("popup-twitter"))
    oauth1_provider.approve_as = account
    open_app(driver, app_origin, srv, provider="twitter.com")
    main = start_popup(driver)
    body = finish_popup(driver, main)
    assert body.get("idToken") and body["providerId"] == "twitter.com" and body["screenName"] == "popper", body
    assert body.get("oauthAccessToken") and body.get("oauthTokenSecret"), body


def test_link_with_popup_adds_the_provider_to_the_signed_in_user(server, driver, app_origin, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("popup-link")
    user = srv.sign_up(email, "link-popup-1", returnSecureToken=True)
    oidc_issuer.approve_as = {"sub": "oidc-link-1", "email": email, "email_verified": True}
    open_app(driver, app_origin, srv, provider="oidc.acme", authType="linkViaPopup", idToken=user["idToken"])
    main = start_popup(driver)
    body = finish_popup(driver, main)
    assert body.get("localId") == user["localId"] and body["federatedId"] == "oidc-link-1", body
    info = ok(srv.lookup(body["idToken"]))["users"][0]
    assert "oidc.acme" in [p["providerId"] for p in info["providerUserInfo"]], info


# --------------------------------------------------------------------------- who may receive the answer
def test_the_handler_answers_only_pages_of_authorized_domains(server):
    srv = server(server={"emulatorMode": True})
    base = {"apiKey": API_KEY, "appName": "[DEFAULT]", "authType": "signInViaPopup", "v": "12.0.0", "eventId": "1",
            "providerId": "google.com"}
    for page in ("https://evil.example/app", "http://localhost.evil.example/", "javascript:alert(1)", ""):
        resp = requests.get(f"{srv.url}/emulator/auth/handler", params={**base, "redirectUrl": page}, timeout=HTTP_TIMEOUT)
        assert resp.status_code == 400 and "text/html" in resp.headers["Content-Type"], (page, resp.status_code)
        assert "evil" not in resp.headers.get("Location", ""), resp.headers
    good = requests.get(f"{srv.url}/emulator/auth/handler", params={**base, "redirectUrl": "http://localhost:5173/"},
                        timeout=HTTP_TIMEOUT)
    assert good.status_code == 200 and "popup-google" not in good.text, good.text[:300]

    # The helper iframe may be framed by the authorized domains only, and says so to the browser.
    iframe = requests.get(f"{srv.url}/__/auth/iframe", params={"apiKey": API_KEY, "appName": "[DEFAULT]"}, timeout=HTTP_TIMEOUT)
    assert iframe.status_code == 200
    policy = iframe.headers["Content-Security-Policy"]
    ancestors = next(p for p in policy.split(";") if p.strip().startswith("frame-ancestors")).split()[1:]
    assert "http://localhost:*" in ancestors and "https://app.example.com:*" in ancestors, policy
    assert not [a for a in ancestors if "evil" in a or a == "*"], policy
    for name in ("herald-gapi.js", "herald-iframe.js", "herald-event.js"):
        script = requests.get(f"{srv.url}/emulator/auth/{name}", timeout=HTTP_TIMEOUT)
        assert script.status_code == 200 and script.headers["Content-Type"].startswith("text/javascript"), name


def test_a_page_of_another_domain_gets_no_event(server, driver, app_origin):
    """The same app served from evil.localhost (Chromium resolves it to loopback; not an authorized domain): the
    browser will not frame the helper for it, so the page never hears from Herald."""
    srv = server(server={"emulatorMode": True})
    evil = app_origin.replace("localhost", "evil.localhost")
    query = urlencode({"herald": herald_url(srv), "apiKey": API_KEY, "gapi": "herald", "provider": "google.com"})
    driver.get(f"{evil}/sdk-flows.html?{query}")
    wait_for(driver, "window.results.length > 0", "the page's iframe failed")
    assert driver.execute_script("return window.iframeReady") is None
    assert driver.execute_script("return window.results[0].error") == "iframe: auth/network-request-failed"


# --------------------------------------------------------------------------- the real SDK, when present
@pytest.fixture
def sdk_site(tmp_path):
    """The real Firebase JS SDK's page (web_app/firebase-sdk.html) beside a local copy of the SDK, served on
    http://localhost:<port>. HERALD_FIREBASE_JS_SDK names a folder holding the SDK's browser modules
    firebase-app.js and firebase-auth.js (as https://www.gstatic.com/firebasejs/<version>/ serves them); the SDK's
    files are never committed. Without them these tests are skipped, and say why."""
    sdk = os.environ.get("HERALD_FIREBASE_JS_SDK", "")
    if not (sdk and (Path(sdk) / "firebase-app.js").is_file() and (Path(sdk) / "firebase-auth.js").is_file()):
        pytest.skip("no local copy of the Firebase JS SDK: set HERALD_FIREBASE_JS_SDK to a folder with "
                    "firebase-app.js and firebase-auth.js to drive the real SDK's popup and redirect")
    root = tmp_path / "site"
    root.mkdir()
    (root / "sdk").symlink_to(Path(sdk).resolve())
    (root / "index.html").symlink_to(WEB_APP / "firebase-sdk.html")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://localhost:{httpd.server_address[1]}/index.html"
    httpd.shutdown()
    httpd.server_close()


def open_sdk(driver, sdk_site: str, srv, **params) -> None:
    driver.get(f"{sdk_site}?{urlencode({'herald': herald_url(srv), 'apiKey': API_KEY, **params})}")
    wait_for(driver, "window.ready === true && window.redirectChecked === true", "the SDK's page started")


def click_start(driver) -> None:
    """Starts a flow the provider approves at once: the SDK may close the popup before a test could look at it."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "start").click()


def sdk_result(driver, count: int = 1) -> dict:
    wait_for(driver, f"window.results && window.results.length >= {count}", "the SDK finished")
    return driver.execute_script("return window.results[window.results.length - 1]")


def test_the_sdk_signs_in_with_a_popup_through_the_emulators_chooser(server, driver, sdk_site):
    from selenium.webdriver.common.by import By

    srv = server(server={"emulatorMode": True})
    email = unique_email("sdk-popup")
    open_sdk(driver, sdk_site, srv, provider="google.com", action="signInWithPopup")
    main = start_popup(driver)
    driver.find_element(By.ID, "sub").send_keys("sdk-google-1")
    driver.find_element(By.ID, "email").send_keys(email)
    driver.find_element(By.CSS_SELECTOR, "form:last-of-type button").click()
    driver.switch_to.window(main)
    body = sdk_result(driver)
    assert body.get("email") == email and body.get("uid") and body["isNewUser"] is True, json.dumps(body)
    assert body["providerId"] == "google.com" and body["profile"].get("email") == email, body


def test_the_sdk_signs_in_with_google_in_a_popup(server, driver, sdk_site, oidc_issuer):
    """Google, configured as providers.google with the OIDC peer's URLs: the SDK's GoogleAuthProvider as it is."""
    google = {**oidc_issuer.herald_provider(), "authorizationUrl": oidc_issuer.base_url + "/authorize",
              "tokenUrl": oidc_issuer.base_url + "/token", "clientSecret": oidc_issuer.client_secret}
    srv = server(providers={"google": google})
    email = unique_email("sdk-google")
    oidc_issuer.approve_as = {"sub": "sdk-google-2", "email": email, "email_verified": True, "name": "Grace Hopper"}
    open_sdk(driver, sdk_site, srv, provider="google.com", action="signInWithPopup")
    click_start(driver)
    body = sdk_result(driver)
    assert body.get("email") == email and body["providerId"] == "google.com", json.dumps(body)
    assert body["profile"].get("id") == "sdk-google-2" and body["profile"].get("name") == "Grace Hopper", body


def test_the_sdk_signs_in_with_a_redirect_and_reads_the_result(server, driver, sdk_site, oidc_issuer):
    from selenium.webdriver.common.by import By

    srv = oidc_server(server, oidc_issuer)
    email = unique_email("sdk-redirect")
    oidc_issuer.approve_as = {"sub": "sdk-redirect-1", "email": email, "email_verified": True}
    open_sdk(driver, sdk_site, srv, provider="oidc.acme", action="signInWithRedirect")
    driver.find_element(By.ID, "start").click()
    wait_for(driver, "location.pathname === '/index.html' && window.redirectChecked === true",
             "the browser came back and getRedirectResult answered")
    body = sdk_result(driver)
    assert body.get("email") == email and body["providerId"] == "oidc.acme", json.dumps(body)
    assert body["operationType"] == "signIn", body


def test_the_sdk_signs_in_with_twitter_in_a_popup(server, driver, sdk_site, oauth1_provider):
    srv = server(providers={"twitter": oauth1_provider.herald_provider()})
    oauth1_provider.approve_as = oauth1_provider.add_user(name="Sdk Twitter", screen_name="sdktweets",
                                                          email=unique_email("sdk-twitter"))
    open_sdk(driver, sdk_site, srv, provider="twitter.com", action="signInWithPopup")
    click_start(driver)
    body = sdk_result(driver)
    assert body["providerId"] == "twitter.com" and body.get("uid"), json.dumps(body)
    assert body["profile"].get("screen_name") == "sdktweets", body


def test_the_sdk_links_and_reauthenticates_with_popups(server, driver, sdk_site, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("sdk-link")
    user = srv.sign_up(email, "sdk-link-password-1")
    oidc_issuer.approve_as = {"sub": "sdk-link-1", "email": email, "email_verified": True}
    open_sdk(driver, sdk_site, srv, provider="oidc.acme", action="linkWithPopup", email=email,
             password="sdk-link-password-1")
    click_start(driver)
    body = sdk_result(driver)
    assert body.get("uid") == user["localId"] and body["operationType"] == "link", json.dumps(body)
    assert sorted(body["providers"]) == ["oidc.acme", "password"], body

    open_sdk(driver, sdk_site, srv, provider="oidc.acme", action="reauthenticateWithPopup", email=email,
             password="sdk-link-password-1")
    click_start(driver)
    again = sdk_result(driver)
    assert again.get("uid") == user["localId"] and again["operationType"] == "reauthenticate", json.dumps(again)

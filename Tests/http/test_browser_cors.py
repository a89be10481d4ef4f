"""CORS for browser apps: preflights and actual responses over plain HTTP, then a real
headless Chromium running a web page (served by Python's http.server on its own port)
that signs up, signs in and refreshes its token against `herald serve` with `fetch`,
from an authorized origin (http://localhost:<port>, admitted by the `localhost` entry
of links.authorizedDomains) and from one that is not (http://evil.localhost:<port>,
which Chromium also resolves to loopback)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import subprocess
import threading
from pathlib import Path
from typing import Optional

import pytest
import requests

from helpers import API_KEY
from http_support import HTTP_TIMEOUT, PROJECT, ok, unique_email
from suites import chromium_binary

CHROMIUM_TIMEOUT = 60
PASSWORD = "browser-password-1"
CLIENT_VERSION = "Chrome/JsCore/11.0.0/FirebaseCore-web"
FIREBASE_HEADERS = ["Content-Type", "Authorization", "X-Firebase-Locale", "X-Client-Version", "X-Firebase-gmpid",
                    "X-Firebase-AppCheck", "X-Firebase-Client", "X-Goog-Api-Key"]
API_PATHS = [
    "/v1/accounts:signUp",
    f"/v1/projects/{PROJECT}/accounts:lookup",
    "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
    "/identitytoolkit.googleapis.com/v1/accounts:sendOobCode",
    "/www.googleapis.com/identitytoolkit/v3/relyingparty/verifyPassword",
    "/securetoken.googleapis.com/v1/token",
]
# links.authorizedDomains is ["localhost", "herald-demo.firebaseapp.com", "app.example.com"] (helpers.DEFAULT_CONFIG).
AUTHORIZED = ["http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:3000", "https://app.example.com",
              "https://herald-demo.firebaseapp.com"]
UNAUTHORIZED = ["https://evil.example", "http://evil.localhost:5173", "https://app.example.com.evil.example",
                "https://sub.app.example.com", "http://localhost.evil.example", "null"]


# --------------------------------------------------------------------------- plain HTTP
def preflight(srv, path: str, origin: str) -> requests.Response:
    return requests.options(srv.url + path, params={"key": API_KEY}, timeout=HTTP_TIMEOUT, allow_redirects=False,
                            headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                                     "Access-Control-Request-Headers": "content-type,x-client-version,x-firebase-locale"})


def show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code}\n{dict(resp.headers)}\n{resp.text[:1000]}"


def tokens(value: Optional[str]) -> set:
    return {t.strip().lower() for t in (value or "").split(",") if t.strip()}


def test_preflight_from_authorized_origins_on_every_api_path(server):
    srv = server()
    for path in API_PATHS:
        for origin in AUTHORIZED:
            resp = preflight(srv, path, origin)
            assert resp.status_code == 204, show(resp)
            assert resp.headers.get("Access-Control-Allow-Origin") == origin, show(resp)
            assert "origin" in tokens(resp.headers.get("Vary")), show(resp)
            assert "post" in tokens(resp.headers.get("Access-Control-Allow-Methods")), show(resp)
            allowed = tokens(resp.headers.get("Access-Control-Allow-Headers"))
            missing = [h for h in FIREBASE_HEADERS if h.lower() not in allowed]
            assert not missing, f"Access-Control-Allow-Headers lacks {missing}\n{show(resp)}"
            max_age = resp.headers.get("Access-Control-Max-Age", "")
            assert max_age.isdigit() and int(max_age) > 0, show(resp)
            assert resp.content == b"", show(resp)


def test_preflight_from_other_origins_is_refused(server):
    srv = server()
    for path in API_PATHS:
        for origin in UNAUTHORIZED:
            resp = preflight(srv, path, origin)
            assert resp.status_code == 403, show(resp)
            assert "Access-Control-Allow-Origin" not in resp.headers, show(resp)


def test_actual_responses_name_only_authorized_origins(server):
    srv = server()
    email = unique_email("cors-actual")
    origin = "http://localhost:5173"

    created = srv.post("accounts:signUp", {"email": email, "password": PASSWORD}, headers={"Origin": origin},
                       prefix="/identitytoolkit.googleapis.com/v1/")
    uid = ok(created)["localId"]
    assert created.headers.get("Access-Control-Allow-Origin") == origin, show(created)
    refused = srv.post("accounts:signInWithPassword", {"email": email, "password": "wrong-password-9"},
                       headers={"Origin": origin})
    assert refused.status_code == 400, show(refused)
    assert refused.headers.get("Access-Control-Allow-Origin") == origin, \
        f"errors must be readable by the page too\n{show(refused)}"
    session = ok(srv.sign_in(email, PASSWORD))
    refreshed = requests.post(srv.url + "/securetoken.googleapis.com/v1/token", params={"key": API_KEY},
                              headers={"Origin": "https://app.example.com"}, timeout=HTTP_TIMEOUT,
                              data={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]})
    assert refreshed.status_code == 200 and refreshed.json().get("user_id") == uid, show(refreshed)
    assert refreshed.headers.get("Access-Control-Allow-Origin") == "https://app.example.com", show(refreshed)

    for other in ("https://evil.example", "http://evil.localhost:5173", None):
        headers = {"Origin": other} if other else {}
        for resp in (srv.post("accounts:signInWithPassword", {"email": email, "password": PASSWORD}, headers=headers),
                     srv.post("accounts:signInWithPassword", {"email": email, "password": "wrong-password-9"},
                              headers=headers)):
            assert "Access-Control-Allow-Origin" not in resp.headers, f"origin {other!r}\n{show(resp)}"


# --------------------------------------------------------------------------- real Chromium
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>herald cors</title></head>
<body>
<p id="state">running</p>
<pre id="results"></pre>
<script>
const HERALD = %(herald)s;
const KEY = %(key)s;
const PLAN = %(plan)s;
const JSON_HEADERS = {"Content-Type": "application/json", "X-Firebase-Locale": "fr",
                      "X-Client-Version": %(client_version)s};

async function call(name, path, init) {
  try {
    const response = await fetch(HERALD + path + "?key=" + encodeURIComponent(KEY), init);
    const text = await response.text();
    let body = null;
    try { body = JSON.parse(text); } catch (e) { body = text; }
    return {name, status: response.status, body};
  } catch (e) {
    return {name, error: String(e.name) + ": " + String(e.message)};
  }
}

function post(name, path, body) {
  return call(name, path, {method: "POST", headers: JSON_HEADERS, body: JSON.stringify(body)});
}

(async () => {
  const results = [];
  try {
    const signUp = await post("signUp", "/identitytoolkit.googleapis.com/v1/accounts:signUp",
      {email: PLAN.signUpEmail, password: PLAN.password, returnSecureToken: true});
    results.push(signUp);
    const signIn = await post("signIn", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
      {email: PLAN.signInEmail, password: PLAN.password, returnSecureToken: true});
    results.push(signIn);
    results.push(await post("wrongPassword", "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword",
      {email: PLAN.signInEmail, password: "not-the-password-0", returnSecureToken: true}));
    const refreshToken = PLAN.refreshToken || (signIn.body && signIn.body.refreshToken) || "none";
    const refresh = await call("refresh", "/securetoken.googleapis.com/v1/token", {
      method: "POST",
      headers: {"Content-Type": "application/x-www-form-urlencoded", "X-Client-Version": %(client_version)s},
      body: "grant_type=refresh_token&refresh_token=" + encodeURIComponent(refreshToken)});
    results.push(refresh);
    const idToken = (refresh.body && refresh.body.id_token) || "none";
    results.push(await post("lookup", "/v1/accounts:lookup", {idToken}));
  } catch (e) {
    results.push({name: "page", error: String(e)});
  }
  document.getElementById("results").textContent = JSON.stringify(results);
  document.getElementById("state").textContent = "done";
})();
</script>
</body></html>
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site(tmp_path):
    """Factory: site(name, html) -> the page's port on 127.0.0.1 (a threaded http.server
    over a temporary directory), stopped at teardown."""
    root = tmp_path / "site"
    root.mkdir()
    servers: list = []
    state = {}

    def publish(name: str, page: str) -> int:
        (root / name).write_text(page, encoding="utf-8")
        if not servers:
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
            httpd.daemon_threads = True
            thread = threading.Thread(target=httpd.serve_forever, name="page-server", daemon=True)
            thread.start()
            servers.append((httpd, thread))
            state["port"] = httpd.server_address[1]
        return state["port"]

    yield publish
    for httpd, thread in servers:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def page_for(srv, plan: dict) -> str:
    return PAGE % {"herald": json.dumps(srv.url), "key": json.dumps(API_KEY), "plan": json.dumps(plan),
                   "client_version": json.dumps(CLIENT_VERSION)}


def run_page(url: str, profile: Path) -> dict:
    """Load `url` in headless Chromium, let its script finish, return {step name: outcome}."""
    argv = [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=10000", "--dump-dom", url]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=CHROMIUM_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within {CHROMIUM_TIMEOUT}s: {' '.join(argv)}", pytrace=False)
    dom = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    console = "\n".join(line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}\n{stderr[-3000:]}"
    state = re.search(r'<p id="state">(.*?)</p>', dom, re.S)
    assert state and state.group(1) == "done", f"the page's script did not finish\n{dom[:3000]}\n{console}"
    found = re.search(r'<pre id="results">(.*?)</pre>', dom, re.S)
    assert found, f"no results in the DOM\n{dom[:3000]}"
    results = json.loads(html.unescape(found.group(1)))
    outcomes = {r["name"]: r for r in results}
    assert "page" not in outcomes, f"the page's script failed: {outcomes['page']}\n{console}"
    return outcomes


def succeeded(outcome: dict, step: str, status: int = 200) -> dict:
    assert "error" not in outcome, f"{step}: fetch failed in the browser: {outcome}"
    assert outcome["status"] == status, f"{step}: {outcome}"
    assert isinstance(outcome["body"], dict), f"{step}: {outcome}"
    return outcome["body"]


def test_a_web_app_on_an_authorized_origin_signs_up_signs_in_and_refreshes(server, site, tmp_path):
    srv = server()
    email = unique_email("browser")
    port = site("app.html", page_for(srv, {"signUpEmail": email, "signInEmail": email, "password": PASSWORD,
                                           "refreshToken": None}))
    outcomes = run_page(f"http://localhost:{port}/app.html", tmp_path / "profile-app")

    created = succeeded(outcomes["signUp"], "signUp")
    uid = created.get("localId")
    assert uid and created.get("email") == email and created.get("idToken"), created
    signed_in = succeeded(outcomes["signIn"], "signIn")
    assert signed_in.get("localId") == uid and signed_in.get("refreshToken"), signed_in
    wrong = succeeded(outcomes["wrongPassword"], "wrongPassword", status=400)
    assert wrong["error"]["message"].startswith("INVALID_LOGIN_CREDENTIALS"), wrong
    refreshed = succeeded(outcomes["refresh"], "refresh")
    assert refreshed.get("user_id") == uid and refreshed.get("id_token"), refreshed
    looked_up = succeeded(outcomes["lookup"], "lookup")
    assert [u["localId"] for u in looked_up["users"]] == [uid], looked_up

    # Herald answered the preflights: the account the page created is there.
    account = srv.admin_user(email)
    assert account is not None and account["localId"] == uid, account


def test_a_page_on_another_origin_is_refused_by_the_browser(server, site, tmp_path):
    srv = server()
    member, intruder = unique_email("member"), unique_email("intruder")
    member_uid = srv.sign_up(member, PASSWORD)["localId"]
    refresh_token = ok(srv.sign_in(member, PASSWORD))["refreshToken"]
    port = site("evil.html", page_for(srv, {"signUpEmail": intruder, "signInEmail": member, "password": PASSWORD,
                                            "refreshToken": refresh_token}))
    outcomes = run_page(f"http://evil.localhost:{port}/evil.html", tmp_path / "profile-evil")

    for step in ("signUp", "signIn", "wrongPassword", "refresh", "lookup"):
        outcome = outcomes[step]
        assert "TypeError" in outcome.get("error", ""), \
            f"{step} from http://evil.localhost:{port} should fail in the browser: {outcome}"
    assert srv.admin_user(intruder) is None, "the refused page created an account"
    assert srv.admin_user(member)["localId"] == member_uid

    # The same page from the authorized origin works: the refusal was about the origin.
    port = site("evil.html", page_for(srv, {"signUpEmail": unique_email("again"), "signInEmail": member,
                                            "password": PASSWORD, "refreshToken": refresh_token}))
    outcomes = run_page(f"http://localhost:{port}/evil.html", tmp_path / "profile-good")
    assert succeeded(outcomes["signIn"], "signIn")["localId"] == member_uid
    assert succeeded(outcomes["refresh"], "refresh")["user_id"] == member_uid

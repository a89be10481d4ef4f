"""#14 part 4: `/openapi.json` describes every path `herald serve` answers, and schemathesis keeps it true.

The document is the committed Sources/HeraldServer/OpenAPI/openapi.json, served as is. These tests fetch it
from a live server, check it is a valid OpenAPI 3.1 document naming every route, then let schemathesis
generate requests from it against that server, once as an app (API key) and once as the administrator
(bearer token, emulator mode): no answer may be a 5xx, or have a status or a JSON body the document does
not describe.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import requests
import schemathesis
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from helpers import API_KEY
from http_support import ADMIN_TOKEN, HTTP_TIMEOUT, PREFIXES, PROJECT

# Every Identity Toolkit method by its v1 name and its legacy v3 name (IdentityToolkitController.methods).
TOOLKIT = {
    "accounts:sendOobCode": "getOobConfirmationCode",
    "accounts:resetPassword": "resetPassword",
    "accounts:signInWithEmailLink": "emailLinkSignin",
    "accounts:update": "setAccountInfo",
    "accounts:createAuthUri": "createAuthUri",
    "accounts:lookup": "getAccountInfo",
    "accounts:signUp": "signupNewUser",
    "accounts": None,
    "accounts:signInWithPassword": "verifyPassword",
    "accounts:signInWithIdp": "verifyAssertion",
    "accounts:delete": "deleteAccount",
    "accounts:batchCreate": "uploadAccount",
    "accounts:batchDelete": None,
    "accounts:query": None,
    "codes:inspect": None,
    "codes:redeem": None,
    "codes:redeemTyped": None,
}
LEGACY_PREFIXES = ["/www.googleapis.com/identitytoolkit/v3/relyingparty/", "/identitytoolkit/v3/relyingparty/"]
# The Identity Toolkit routes outside that table, by HTTP method (IdentityToolkitController.routes and
# .legacyRoutes): the v1 ones under every prefix, the v3 ones under every legacy prefix.
TOOLKIT_V1 = {("get", "accounts:batchGet")}
TOOLKIT_V3 = {("post", "downloadAccount")}
KEYS = "securetoken@system.gserviceaccount.com"

# Every other route, by method (HeraldServer.application).
ROUTES = {
    ("post", "/securetoken.googleapis.com/v1/token"), ("post", "/v1/token"),
    ("get", "/.well-known/jwks.json"), ("get", f"/service_accounts/v1/jwk/{KEYS}"),
    ("get", f"/robot/v1/metadata/x509/{KEYS}"),
    ("get", "/__/auth/action"), ("post", "/__/auth/action"), ("get", "/__/auth/links"),
    ("get", "/__/auth/code"), ("post", "/__/auth/code"),
    ("get", "/__/auth/handler"), ("get", "/emulator/auth/handler"),
    # The handler's helper iframe and scripts (SignInHandlerController), under both prefixes.
    ("get", "/__/auth/iframe"), ("get", "/emulator/auth/iframe"),
    ("get", "/__/auth/herald-event.js"), ("get", "/emulator/auth/herald-event.js"),
    ("get", "/__/auth/herald-iframe.js"), ("get", "/emulator/auth/herald-iframe.js"),
    ("get", "/__/auth/herald-gapi.js"), ("get", "/emulator/auth/herald-gapi.js"),
    ("get", "/unsubscribe"), ("post", "/unsubscribe"),
    ("get", "/admin/campaigns/{id}"), ("get", "/admin/audit"),
    ("post", "/admin/messages:retry"), ("post", "/admin/messages:cancel"),
    ("get", "/admin/suppressions"), ("post", "/admin/suppressions"),
    ("get", "/admin/suppressions/{email}"), ("delete", "/admin/suppressions/{email}"),
    ("get", "/emulator/v1/projects/{project}/oobCodes"),
    # The /admin console (ConsoleController.routes).
    ("get", "/admin"), ("get", "/admin/sign-in"), ("post", "/admin/sign-in"), ("post", "/admin/sign-out"),
    ("get", "/admin/campaigns"), ("post", "/admin/campaigns/{id}/pause"), ("post", "/admin/campaigns/{id}/resume"),
    ("post", "/admin/campaigns/{id}/cancel"), ("get", "/admin/campaigns/new"), ("post", "/admin/campaigns/new"),
    ("get", "/admin/campaigns/{id}/review"), ("get", "/admin/campaigns/{id}/rejects.csv"), ("get", "/admin/messages"), ("get", "/admin/messages/{id}"),
    ("post", "/admin/messages/{id}/retry"), ("post", "/admin/messages/{id}/cancel"), ("post", "/admin/console/messages/bulk"),
    ("get", "/admin/audit/search"),
    ("get", "/admin/templates"), ("get", "/admin/templates/{action}/{locale}"),
    ("get", "/admin/templates/{action}/{locale}/html"), ("post", "/admin/templates/{action}/{locale}/test"),
    ("post", "/admin/templates/{action}/{locale}/preview"), ("post", "/admin/templates/{action}/{locale}/save"),
    ("post", "/admin/templates/{action}/{locale}/revert"),
    ("get", "/admin/console/suppressions"), ("post", "/admin/console/suppressions/add"),
    ("post", "/admin/console/suppressions/remove"), ("get", "/admin/console/suppressions/export"),
    ("get", "/admin/console/webhooks"), ("post", "/admin/console/webhooks/replay"), ("get", "/admin/console/activity"),
    ("get", "/health"), ("get", "/metrics"), ("get", "/openapi.json"),
}

# Every check about Herald's answers: no 5xx, statuses, bodies, content types and headers the document names, and a
# 405 whose Allow lists exactly the path's methods. Left out, because Firebase answers so and its clients expect it:
# ignored_auth and missing_required_header (a bad or missing API key is 400 keyInvalid or 403, not 401), and
# negative_data_rejection / positive_data_acceptance (the document types fields; whether an email or a code is
# valid is decided by the rules, with Firebase's 400 errors, and Firebase ignores fields it does not know).
CHECKS = ("not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance,"
          "response_headers_conformance,unsupported_method")
EXAMPLES_PER_OPERATION = 12
SCHEMATHESIS_TIMEOUT = 420  # seconds, each run: ~2 min alone on 2 cores, more beside other suites


def expected_routes() -> set[tuple[str, str]]:
    routes = set(ROUTES)
    for prefix in PREFIXES:
        templated = prefix.replace(f"/projects/{PROJECT}/", "/projects/{project}/")
        routes |= {("post", templated + v1) for v1 in TOOLKIT}
        routes |= {(method, templated + v1) for method, v1 in TOOLKIT_V1}
    for prefix in LEGACY_PREFIXES:
        routes |= {("post", prefix + v3) for v3 in TOOLKIT.values() if v3}
        routes |= {(method, prefix + v3) for method, v3 in TOOLKIT_V3}
    return routes


def documented_routes(document: dict) -> set[tuple[str, str]]:
    routes = set()
    for path, item in document["paths"].items():
        if "$ref" in item:
            item = document["components"]["pathItems"][item["$ref"].rsplit("/", 1)[1]]
        routes |= {(method, path) for method in ("get", "post", "delete", "put", "patch") if method in item}
    return routes


def fetch_document(srv) -> dict:
    resp = requests.get(f"{srv.url}/openapi.json", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("application/json")
    return resp.json()


def test_openapi_json_is_a_valid_openapi_3_1_document_of_every_route(server):
    srv = server()
    document = fetch_document(srv)
    assert document["openapi"].startswith("3.1.")
    validate(document, cls=OpenAPIV31SpecValidator)
    operations = [result.ok() for result in schemathesis.openapi.from_dict(document).get_all_operations()]
    assert len(operations) == len(expected_routes())

    documented = documented_routes(document)
    assert documented == expected_routes(), (
        f"undocumented: {sorted(expected_routes() - documented)}; not served: {sorted(documented - expected_routes())}")

    # Each documented route is one the server takes: routed, it answers something other than the
    # unrouted 404/405 (the API families' catch-all and the framework both say NOT_FOUND).
    fill = {"{project}": PROJECT, "{id}": "1", "{email}": "nobody@example.com", "{action}": "sign-in", "{locale}": "en"}
    for method, path in sorted(documented):
        url = srv.url + path
        for placeholder, value in fill.items():
            url = url.replace(placeholder, value)
        resp = requests.request(method, url, timeout=HTTP_TIMEOUT, allow_redirects=False)
        if path.startswith(("/emulator/v1/", "/admin/suppressions/")) or path == "/admin/campaigns/{id}":
            assert resp.status_code in (401, 404), (method, path, resp.status_code)  # not emulator mode; admin
            continue
        assert resp.status_code not in (404, 405), (method, path, resp.status_code, resp.text[:200])


def run_schemathesis(srv, tmp_path: Path, name: str, auth: str, extra: tuple = ()) -> subprocess.CompletedProcess:
    """schemathesis against the live server, from the document it serves; `auth` is the TOML of the schemes."""
    config = tmp_path / f"schemathesis-{name}.toml"
    # The coverage phase also sends methods a path does not serve, expecting 405: TRACE and QUERY are left out,
    # since the front door answers methods Herald serves nowhere with 501 before any route sees them.
    config.write_text(
        f"""
[parameters]
"path.project" = "{PROJECT}"

[phases.coverage]
unexpected-methods = ["get", "put", "post", "delete", "patch", "options"]

{auth}
""",
        encoding="utf-8",
    )
    # One worker: CPython 3.11's ast module keeps its recursion depth in shared state, so hypothesis parsing
    # lambda sources on two threads at once fails with "AST constructor recursion depth mismatch"
    # (python/cpython#106905), which failed CI once; one worker takes about as long here.
    argv = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{srv.url}/openapi.json",
        "--checks", CHECKS, "--max-examples", str(EXAMPLES_PER_OPERATION), "--phases", "examples,coverage,fuzzing",
        "--workers", "1", "--seed", "14", "--no-color", "--request-timeout", "10", "--max-redirects", "0",
        "--generation-database", "none", "--suppress-health-check", "all", *extra,
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=SCHEMATHESIS_TIMEOUT, cwd=tmp_path)
    (tmp_path / f"schemathesis-{name}.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    return result


def assert_no_failures(result: subprocess.CompletedProcess, srv) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"schemathesis exited {result.returncode}\n{output[-12000:]}\n{srv.stderr_text()[-4000:]}"


def test_schemathesis_finds_no_server_error_or_undocumented_answer_as_an_app(server, tmp_path):
    srv = server()
    started = time.monotonic()
    result = run_schemathesis(srv, tmp_path, "app", f'[auth.openapi.apiKey]\napi_key = "{API_KEY}"\n'
                                                    f'[auth.openapi.adminToken]\nbearer = "{ADMIN_TOKEN}"\n')
    assert_no_failures(result, srv)
    print(f"schemathesis as an app: {time.monotonic() - started:.1f}s")


def test_schemathesis_finds_no_server_error_or_undocumented_answer_as_the_administrator(server, tmp_path):
    srv = server(server={"emulatorMode": True})
    started = time.monotonic()
    result = run_schemathesis(srv, tmp_path, "admin", f'[auth.openapi.adminToken]\nbearer = "{ADMIN_TOKEN}"\n')
    assert_no_failures(result, srv)
    print(f"schemathesis as the administrator: {time.monotonic() - started:.1f}s")


def console_session(srv) -> str:
    """Signs in to the /admin console through its form, as a browser does: the session cookie's value."""
    form = requests.get(f"{srv.url}/admin/sign-in", timeout=HTTP_TIMEOUT)
    csrf_cookie = form.cookies.get("herald_console_csrf") or next(
        c.split("=", 1)[1].split(";", 1)[0] for c in form.headers.get("set-cookie", "").split(", ")
        if c.startswith("herald_console_csrf="))
    field = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    signed_in = requests.post(f"{srv.url}/admin/sign-in", data={"token": ADMIN_TOKEN, "csrf": field},
                              headers={"Cookie": f"herald_console_csrf={csrf_cookie}"}, allow_redirects=False,
                              timeout=HTTP_TIMEOUT)
    assert signed_in.status_code == 303, signed_in.text
    session = re.search(r"herald_console=([^;]+)", signed_in.headers["set-cookie"])
    assert session, signed_in.headers
    return session.group(1)


def test_schemathesis_finds_no_server_error_or_undocumented_answer_on_the_signed_in_console(server, tmp_path):
    """Every /admin route with a real console session (the runs above only ever see its sign-in redirect): the
    pages with their filters and ids fuzzed, and the forms' POSTs, which without the session's CSRF token are
    refused (403) however their fields are made."""
    srv = server()
    session = console_session(srv)
    started = time.monotonic()
    result = run_schemathesis(srv, tmp_path, "console", f'[auth.openapi.consoleSession]\napi_key = "{session}"\n',
                              extra=["--include-path-regex", "^/admin"])
    assert_no_failures(result, srv)
    assert session not in srv.stderr_text(), "the session cookie reached the log"
    print(f"schemathesis on the console: {time.monotonic() - started:.1f}s")

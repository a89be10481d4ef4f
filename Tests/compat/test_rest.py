"""Ported from firebase-tools src/emulator/auth/rest.spec.ts ("REST API mapping", "authentication").

Adapted: the emulator's cases that sign up an anonymous user (`{}` or `{returnSecureToken:
true}`) sign up an email/password user; "Bearer owner" cases that target another project
(`targetProjectId: "example2"`) target Herald's own project; the CORS case uses a real origin
(`http://example.com`, an authorized domain of the suite) on an API path, where the emulator sends
the bare host `example.com` to `/`; the integer-enum cases carry the continueUrl and
canHandleCodeInApp that EMAIL_SIGNIN needs in Herald.

Skipped there: "should respond to status checks" (the emulator's `GET /` banner), "should treat
production service account as authenticated to project" (Herald accepts only its admin token and,
when allowed, `Bearer owner`; never an arbitrary `ya29.` token), and the three "tenant IDs do not
match" cases (tenants).
"""

from __future__ import annotations

import pytest
import requests

from compat_support import (
    API_KEY, CONTINUE_URL, HTTP_TIMEOUT, PROJECT, call, expect_error, expect_ok, expect_status, path_of, unique_email,
)

PASSWORD = "notasecret"
ORIGIN = "http://example.com"


# --------------------------------------------------------------------------- REST API mapping
@pytest.mark.parametrize("path", [
    path_of("signUp", "v1"),
    path_of("sendOobCode", "v1p"),
    path_of("signUp", "v3"),
    "/securetoken.googleapis.com/v1/token",
])
def test_should_allow_cross_origin_requests(emu, path):
    """rest.spec.ts: should allow cross-origin requests"""
    resp = requests.options(emu.url + path, headers={
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization,X-Client-Version,X-Whatever-Header",
        "Access-Control-Request-Private-Network": "true",
    }, timeout=HTTP_TIMEOUT)
    # The emulator answers 204; any 2xx is a successful preflight.
    assert 200 <= resp.status_code < 300, f"{resp.status_code} {resp.text[:500]}"
    # Some clients won't accept '*': Origin and Access-Control-Request-Headers are reflected.
    assert resp.headers.get("Access-Control-Allow-Origin") == ORIGIN, dict(resp.headers)
    allowed = [h.strip().lower() for h in resp.headers.get("Access-Control-Allow-Headers", "").split(",")]
    for header in ("authorization", "x-client-version", "x-whatever-header"):
        assert header in allowed, dict(resp.headers)
    # Enables accessing localhost when the site is exposed via a tunnel.
    assert resp.headers.get("Access-Control-Allow-Private-Network") == "true", dict(resp.headers)


def test_should_allow_cross_origin_requests_on_the_actual_response(emu):
    """rest.spec.ts: should allow cross-origin requests (the actual request after the preflight)"""
    resp = requests.post(emu.url + path_of("signUp", "v1"), params={"key": API_KEY},
                         json={"email": unique_email("cors"), "password": PASSWORD},
                         headers={"Origin": ORIGIN}, timeout=HTTP_TIMEOUT)
    expect_ok(resp)
    assert resp.headers.get("Access-Control-Allow-Origin") == ORIGIN, dict(resp.headers)


@pytest.mark.parametrize("family", ["v1", "v3"], ids=["v1", "legacy"])
def test_should_handle_integer_values_for_enums(emu, family):
    """rest.spec.ts: should handle integer values for enums"""
    # Also "should handle integer values for enums (legacy API path)" as the legacy parameter.
    # Proto integer value for "EMAIL_SIGNIN". Android client SDK sends this.
    request_type = 6
    body = expect_ok(call(emu, "sendOobCode", {"email": unique_email("bob"), "requestType": request_type,
                                               "returnOobLink": True, "continueUrl": CONTINUE_URL,
                                               "canHandleCodeInApp": True}, family=family, admin=True))
    assert "mode=signIn" in body["oobLink"], body


def test_should_convert_numbers_to_strings_for_type_string_fields(emu):
    """rest.spec.ts: should convert numbers to strings for type:string fields"""
    # validSince should be an int64-formatted string, but the Node.js Admin SDK sends a number.
    resp = call(emu, "update", {"localId": "nosuch", "validSince": 1611780718}, admin=True)
    # It should pass validation and get into handler logic.
    expect_error(resp, "USER_NOT_FOUND")


# --------------------------------------------------------------------------- authentication
def test_should_throw_403_if_api_key_is_not_provided(emu):
    """rest.spec.ts: should throw 403 if API key is not provided"""
    resp = call(emu, "signUp", {"returnSecureToken": True}, key=None)
    expect_status(403, resp)
    assert resp.json()["error"].get("status") == "PERMISSION_DENIED", resp.text


def test_should_accept_api_key_as_a_query_parameter(emu):
    """rest.spec.ts: should accept API key as a query parameter"""
    # Adapted: an email/password sign-up instead of an anonymous one.
    expect_ok(call(emu, "signUp", {"email": unique_email("key"), "password": PASSWORD}))


def test_should_accept_api_key_in_http_header_x_goog_api_key(emu):
    """rest.spec.ts: should accept API key in HTTP Header x-goog-api-key"""
    # Adapted: an email/password sign-up instead of an anonymous one.
    expect_ok(call(emu, "signUp", {"email": unique_email("hdr"), "password": PASSWORD}, key=None,
                   headers={"x-goog-api-key": API_KEY}))


def test_should_ignore_non_bearer_authorization_headers(emu):
    """rest.spec.ts: should ignore non-Bearer Authorization headers"""
    # This has no effect on the request handling, since it is not Bearer: without a key, 403.
    resp = call(emu, "signUp", {"returnSecureToken": True}, key=None, authorization="Basic YWxhZGRpbjpvcGVuc2VzYW1l")
    expect_status(403, resp)
    assert resp.json()["error"].get("status") == "PERMISSION_DENIED", resp.text
    # ...and with the key it is an ordinary app call.
    expect_ok(call(emu, "signUp", {"email": unique_email("basic"), "password": PASSWORD},
                   authorization="Basic YWxhZGRpbjpvcGVuc2VzYW1l"))


def test_should_treat_bearer_owner_as_authenticated_to_project(emu):
    """rest.spec.ts: should treat Bearer owner as authenticated to project"""
    # This authenticates as valid OAuth 2 credentials, no API key needed; targetProjectId
    # requires OAuth 2 and should work correctly.
    expect_ok(call(emu, "signUp", {"email": unique_email("owner"), "password": PASSWORD, "targetProjectId": PROJECT},
                   admin=True))


def test_should_ignore_casing_of_bearer_owner_in_authorization_header(emu):
    """rest.spec.ts: should ignore casing of Bearer / owner in Authorization header"""
    expect_ok(call(emu, "signUp", {"email": unique_email("owner"), "password": PASSWORD, "targetProjectId": PROJECT},
                   key=None, authorization="bEArEr OWNER"))


def test_should_deny_requests_with_target_project_id_but_without_oauth_2(emu):
    """rest.spec.ts: should deny requests with targetProjectId but without OAuth 2"""
    # Specifying this field requires OAuth 2. API key is not sufficient.
    expect_error(call(emu, "signUp", {"targetProjectId": "example2"}),
                 "INSUFFICIENT_PERMISSION : Only authenticated requests can specify target_project_id.")

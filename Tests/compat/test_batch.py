"""Ported from firebase-tools src/emulator/auth/batch.spec.ts ("accounts:batchGet",
"accounts:batchCreate", "accounts:batchDelete"): the administrator's import, listing and deletion
of accounts, as `Bearer owner`, under the project-scoped v1 paths and the legacy v3
`uploadAccount` / `downloadAccount`.

The batchGet cases list every account of the project, so each runs on a server of its own
(`compat_server`); the others share the module's `emu` and use localIds, emails, phone numbers and
provider raw ids of their own where the emulator's tests use fixed ones (`foo`, `test1`,
`foo@example.com`, `dup`), and the expected messages name those.

Adapted:
* Herald keeps phone numbers and custom claims (`customAttributes`) as account data only: there
  is no phone sign-in. "should create specified accounts" (and its legacy twin) check the phone
  user with an admin lookup (phoneNumber, customAttributes) instead of `signInWithPhoneNumber` and
  the custom claim in its ID token; "should overwrite users with matching localIds if
  allowOverwrite" looks the overwritten phone user up by localId the same way, and checks the
  old password no longer signs in.
* "should return error for individual invalid entries": Herald's message for a `federatedId`
  alone (index 9) is "federatedId alone is not enough for Herald: give providerId and rawId"
  (the emulator's is its own not-implemented note), and for a user with `mfaInfo` (indexes 10 and
  11) "second factors (mfaInfo) cannot be imported: Herald has no multi-factor sign-in" (Herald
  has no multi-factor sign-in, so it refuses second factors rather than checking their email).
  The test also checks that only the valid user was created.
* "should delete specified disabled accounts" and its siblings also check afterwards which
  accounts are left.

Not ported:
* "should return MFA info" and "should import MFA info" (MFA: Herald refuses mfaInfo, see above).
* batchGet and batchCreate "should error if auth is disabled", "should error if user tenantId does
  not match state tenantId", "should create users with tenantId if present" (tenants).
* "should accept Auth Emulator fake passwordHash from request" (the emulator's `fakeHash:` format;
  Herald imports Firebase's real hash algorithms, see Tests/http/test_firebase_import.py).
* "should reject production passwordHash" (`it.skip` in the spec itself).
"""

from __future__ import annotations

import json
import os
import time
from urllib.parse import quote

import requests

from compat_support import (
    HTTP_TIMEOUT, PROJECT, call, expect_error, expect_ok, expect_status, get_account_info_by_local_id,
    get_signin_methods, register_user, sign_in_with_email_link, sign_in_with_password, unique_email,
    update_account_by_local_id,
)

V1P = f"/identitytoolkit.googleapis.com/v1/projects/{PROJECT}/"
V3 = "/www.googleapis.com/identitytoolkit/v3/relyingparty/"
OWNER = {"Authorization": "Bearer owner"}
NOT_DISABLED = "NOT_DISABLED : Disable the account before batch deletion."


# --------------------------------------------------------------------------- helpers
def unique_id(tag: str) -> str:
    return f"{tag}-{os.getpid()}-{time.monotonic_ns()}"


def unique_phone() -> str:
    """An E.164 number of the emulator's +1555555 range, different for every call."""
    return f"+1555{time.monotonic_ns() % 10_000_000:07d}"


def batch_create(srv, body: dict) -> requests.Response:
    return call(srv, "batchCreate", body, family="v1p", admin=True)


def upload_account(srv, body: dict) -> requests.Response:
    return requests.post(srv.url + V3 + "uploadAccount", json=body, headers=OWNER, timeout=HTTP_TIMEOUT)


def batch_get(srv, **params) -> requests.Response:
    return requests.get(srv.url + V1P + "accounts:batchGet", params=params, headers=OWNER, timeout=HTTP_TIMEOUT)


def download_account(srv, body: dict) -> requests.Response:
    return requests.post(srv.url + V3 + "downloadAccount", json=body, headers=OWNER, timeout=HTTP_TIMEOUT)


def batch_delete(srv, body: dict) -> requests.Response:
    return call(srv, "batchDelete", body, family="v1p", admin=True)


def answer(resp: requests.Response) -> dict:
    """A 200 JSON answer that may list per-user errors (compat_support.expect_ok refuses `error`)."""
    expect_status(200, resp)
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.text
    body = resp.json()
    assert isinstance(body, dict), resp.text
    return body


def no_errors(body: dict, field: str = "error") -> None:
    """`expect(res.body.error || []).to.have.length(0)`."""
    assert (body.get(field) or []) == [], body


def register_anon_user(srv) -> dict:
    """registerAnonUser: app signUp with no credential."""
    body = expect_ok(call(srv, "signUp", {"returnSecureToken": True}))
    return {k: body.get(k) for k in ("idToken", "localId", "refreshToken")}


def sign_in_with_fake_claims(srv, provider_id: str, claims: dict) -> dict:
    """signInWithFakeClaims: the emulator's unsigned IdP claims (Herald takes them in emulator mode)."""
    fake = json.dumps({"iss": "example.com", "aud": "example.com", "exp": 1597974008, "iat": 1597970408, **claims})
    body = expect_ok(call(srv, "signInWithIdp", {
        "postBody": f"providerId={quote(provider_id, safe='')}&id_token={quote(fake, safe='')}",
        "requestUri": "http://localhost", "returnIdpCredential": True, "returnSecureToken": True}))
    return {k: body.get(k) for k in ("idToken", "localId", "refreshToken", "email")}


def lookup_local_ids(srv, *local_ids: str) -> list:
    body = expect_ok(call(srv, "lookup", {"localId": list(local_ids)}, admin=True))
    return sorted(u["localId"] for u in body.get("users") or [])


def local_ids(body: dict) -> list:
    return [u["localId"] for u in body.get("users") or []]


# --------------------------------------------------------------------------- accounts:batchGet
def test_should_allow_listing_all_accounts(compat_server):
    """batch.spec.ts: should allow listing all accounts"""
    srv = compat_server()
    user1 = register_anon_user(srv)
    user2 = register_user(srv, "foo@example.com", "foobar")
    body = expect_ok(batch_get(srv))
    assert sorted(local_ids(body)) == sorted([user1["localId"], user2["localId"]]), body
    assert "nextPageToken" not in body, body


def test_should_allow_listing_all_accounts_using_legacy_endpoint(compat_server):
    """batch.spec.ts: should allow listing all accounts using legacy endpoint"""
    srv = compat_server()
    user1 = register_anon_user(srv)
    user2 = register_user(srv, "foo@example.com", "foobar")
    body = expect_ok(download_account(srv, {"targetProjectId": PROJECT}))
    assert sorted(local_ids(body)) == sorted([user1["localId"], user2["localId"]]), body
    assert "nextPageToken" not in body, body


def test_should_allow_specifying_max_results_and_pagination(compat_server):
    """batch.spec.ts: should allow specifying maxResults and pagination"""
    srv = compat_server()
    user1 = register_anon_user(srv)
    user2 = register_user(srv, "foo@example.com", "foobar")
    ids = sorted([user1["localId"], user2["localId"]])

    first = expect_ok(batch_get(srv, maxResults=1))
    assert local_ids(first) == ids[:1], first
    token = first.get("nextPageToken")
    assert isinstance(token, str), first

    second = expect_ok(batch_get(srv, nextPageToken=token))
    assert local_ids(second) == ids[1:], second
    assert "nextPageToken" not in second, second

    # The legacy API recognizes the page token too.
    legacy = expect_ok(download_account(srv, {"targetProjectId": PROJECT, "nextPageToken": token}))
    assert local_ids(legacy) == [max(user1["localId"], user2["localId"])], legacy
    assert "nextPageToken" not in legacy, legacy


def test_should_always_return_a_page_token_if_page_is_full(compat_server):
    """batch.spec.ts: should always return a page token if page is full"""
    srv = compat_server()
    user1 = register_anon_user(srv)
    user2 = register_user(srv, "foo@example.com", "foobar")
    ids = sorted([user1["localId"], user2["localId"]])

    full = expect_ok(batch_get(srv, maxResults=2))
    assert local_ids(full) == ids, full
    token = full.get("nextPageToken")
    assert isinstance(token, str), full  # as production (firebase-tools#3231)

    empty = expect_ok(batch_get(srv, nextPageToken=token))
    assert local_ids(empty) == [], empty
    assert "nextPageToken" not in empty, empty


# --------------------------------------------------------------------------- accounts:batchCreate
def test_should_create_specified_accounts(emu):
    """batch.spec.ts: should create specified accounts"""
    user1 = {"localId": unique_id("foo"), "email": unique_email("foo"), "rawPassword": "notasecret"}
    user2 = {"localId": unique_id("bar"), "phoneNumber": unique_phone(), "customAttributes": '{"hello": "world"}'}
    no_errors(answer(batch_create(emu, {"users": [user1, user2]})))

    assert get_signin_methods(emu, user1["email"]) == ["password"]
    assert sign_in_with_password(emu, user1["email"], "notasecret")["localId"] == user1["localId"]
    # Adapted: no phone sign-in in Herald; the phone number and claims are the account's data.
    info = get_account_info_by_local_id(emu, user2["localId"])
    assert info["phoneNumber"] == user2["phoneNumber"], info
    assert info["customAttributes"] == user2["customAttributes"], info


def test_should_create_specified_accounts_via_legacy_endpoint(emu):
    """batch.spec.ts: should create specified accounts via legacy endpoint"""
    user1 = {"localId": unique_id("foo"), "email": unique_email("foo"), "rawPassword": "notasecret"}
    user2 = {"localId": unique_id("bar"), "phoneNumber": unique_phone()}
    no_errors(answer(upload_account(emu, {"users": [user1, user2], "targetProjectId": PROJECT})))

    assert get_signin_methods(emu, user1["email"]) == ["password"]
    assert sign_in_with_password(emu, user1["email"], "notasecret")["localId"] == user1["localId"]
    # Adapted: no phone sign-in in Herald.
    assert get_account_info_by_local_id(emu, user2["localId"])["phoneNumber"] == user2["phoneNumber"]


def test_should_error_if_users_is_empty_or_missing(emu):
    """batch.spec.ts: should error if users is empty or missing"""
    expect_error(batch_create(emu, {"users": []}), "MISSING_USER_ACCOUNT", exact=True)
    expect_error(batch_create(emu, {}), "MISSING_USER_ACCOUNT", exact=True)


def test_should_convert_emails_to_lowercase(emu):
    """batch.spec.ts: should convert emails to lowercase"""
    user = {"localId": unique_id("foo"), "email": unique_email("foo").upper(), "rawPassword": "notasecret"}
    no_errors(answer(batch_create(emu, {"users": [user]})))
    assert get_account_info_by_local_id(emu, user["localId"])["email"] == user["email"].lower()


def test_should_error_for_duplicate_emails_in_payload_if_sanity_check_is_true(emu):
    """batch.spec.ts: should error for duplicate emails in payload if sanityCheck is true"""
    email = unique_email("foo")
    test1, test2 = unique_id("test1"), unique_id("test2")
    resp = batch_create(emu, {"sanityCheck": True, "users": [{"localId": test1, "email": email},
                                                              {"localId": test2, "email": email}]})
    expect_error(resp, f"DUPLICATE_EMAIL : {email}")
    assert lookup_local_ids(emu, test1, test2) == []


def test_should_block_reusing_existing_email_if_sanity_check_is_true(emu):
    """batch.spec.ts: should block reusing existing email if sanityCheck is true"""
    user = sign_in_with_email_link(emu, unique_email("bar"))
    expect_ok(user["response"])
    test1 = unique_id("test1")
    body = answer(batch_create(emu, {"sanityCheck": True, "users": [{"localId": test1, "email": user["email"]}]}))
    assert body.get("error") == [{"index": 0, "message": "email exists in other account in database"}], body
    assert lookup_local_ids(emu, test1) == []


def test_should_error_for_duplicate_provider_id_raw_ids_in_payload_if_sanity_check_is_true(emu):
    """batch.spec.ts: should error for duplicate providerId+rawIds in payload if sanityCheck is true"""
    raw_id = unique_id("dup")
    test1, test2 = unique_id("test1"), unique_id("test2")
    resp = batch_create(emu, {"sanityCheck": True, "users": [
        {"localId": test1, "providerUserInfo": [{"providerId": "google.com", "rawId": raw_id}]},
        {"localId": test2, "providerUserInfo": [{"providerId": "google.com", "rawId": raw_id}]}]})
    expect_error(resp, f"DUPLICATE_RAW_ID : Provider id(google.com), Raw id({raw_id})")
    assert lookup_local_ids(emu, test1, test2) == []


def test_should_block_reusing_existing_provider_id_raw_ids_if_sanity_check_is_true(emu):
    """batch.spec.ts: should block reusing exisiting providerId+rawIds if sanityCheck is true"""
    provider_id, raw_id = "google.com", unique_id("0123456")
    sign_in_with_fake_claims(emu, provider_id, {"sub": raw_id})
    test1 = unique_id("test1")
    body = answer(batch_create(emu, {"sanityCheck": True, "users": [
        {"localId": test1, "providerUserInfo": [{"providerId": provider_id, "rawId": raw_id}]}]}))
    assert body.get("error") == [{"index": 0, "message": "raw id exists in other account in database"}], body
    assert lookup_local_ids(emu, test1) == []


def test_should_block_duplicate_local_ids_by_default(emu):
    """batch.spec.ts: should block duplicate localIds by default"""
    test1 = unique_id("test1")
    expect_error(batch_create(emu, {"users": [{"localId": test1}, {"localId": test1}]}),
                 f"DUPLICATE_LOCAL_ID : {test1}")
    assert lookup_local_ids(emu, test1) == []

    local_id = register_anon_user(emu)["localId"]
    body = answer(batch_create(emu, {"users": [{"localId": local_id}]}))
    assert body.get("error") == [
        {"index": 0, "message": "localId belongs to an existing account - can not overwrite."}], body


def test_should_not_error_for_empty_mfa_info(emu):
    """batch.spec.ts: should not error for empty MFA info"""
    test1 = unique_id("test1")
    no_errors(answer(batch_create(emu, {"users": [{"localId": test1, "mfaInfo": []}]})))
    assert lookup_local_ids(emu, test1) == [test1]


def test_should_return_error_for_individual_invalid_entries(emu):
    """batch.spec.ts: should return error for individual invalid entries"""
    long_string = "x" * 998  # new Array(999).join("x")
    ids = {n: unique_id(f"test{n}") for n in range(1, 12)}
    phone = "+15555550100"
    users = [
        {"email": unique_email("foo")},  # no localId
        {"localId": ids[1]},  # valid
        {"localId": ids[2], "email": "not#an$email"},
        {"localId": ids[3], "phoneNumber": "not#a$phone%number"},
        {"localId": ids[4], "customAttributes": "not#a$json%object"},
        {"localId": ids[5], "customAttributes": '{"sub": "123"}'},  # sub is reserved
        {"localId": ids[6], "customAttributes": f'{{"a":"{long_string}"}}'},  # too large
        {"localId": ids[7], "providerUserInfo": [{"providerId": "google.com"}]},  # no rawId
        {"localId": ids[8], "providerUserInfo": [{"rawId": "012345"}]},  # no providerId
        {"localId": ids[9], "providerUserInfo": [{"federatedId": "foo-bar"}]},
        {"localId": ids[10], "mfaInfo": [{"phoneInfo": phone}]},  # MFA without email
        {"localId": ids[11], "email": unique_email("someone"), "mfaInfo": [{"phoneInfo": phone}]},  # unverified
    ]
    body = answer(batch_create(emu, {"users": users}))
    no_mfa = "second factors (mfaInfo) cannot be imported: Herald has no multi-factor sign-in"
    assert body.get("error") == [
        {"index": 0, "message": "localId is missing"},
        {"index": 2, "message": "email is invalid"},
        {"index": 3, "message": "phone number format is invalid"},
        {"index": 4, "message": "Invalid custom claims provided."},
        {"index": 5, "message": "Custom claims provided include a reserved claim."},
        {"index": 6, "message": "Custom claims provided are too large."},
        {"index": 7, "message": "federatedId or (providerId & rawId) is required"},
        {"index": 8, "message": "federatedId or (providerId & rawId) is required"},
        # Herald's words where the emulator has its own (see the module docstring).
        {"index": 9, "message": "federatedId alone is not enough for Herald: give providerId and rawId"},
        {"index": 10, "message": no_mfa},
        {"index": 11, "message": no_mfa},
    ], body
    assert lookup_local_ids(emu, *ids.values()) == [ids[1]]


def test_should_overwrite_users_with_matching_local_ids_if_allow_overwrite(emu):
    """batch.spec.ts: should overwrite users with matching localIds if allowOverwrite"""
    to_overwrite1 = sign_in_with_fake_claims(emu, "google.com", {"sub": unique_id("doh")})
    old_email = unique_email("bar")
    to_overwrite2 = register_user(emu, old_email, "hawaii", displayName="Old Display Name")

    user1 = {"localId": to_overwrite1["localId"], "email": unique_email("foo"), "rawPassword": "notasecret"}
    user2 = {"localId": to_overwrite2["localId"], "phoneNumber": unique_phone(), "displayName": "New Display Name"}
    no_errors(answer(batch_create(emu, {"users": [user1, user2], "allowOverwrite": True})))

    info1 = get_account_info_by_local_id(emu, user1["localId"])
    assert info1["email"] == user1["email"], info1
    # The previous google.com link is gone: it is not in the new user.
    assert info1["providerUserInfo"] == [{"providerId": "password", "rawId": user1["email"],
                                          "email": user1["email"], "federatedId": user1["email"]}], info1
    assert sign_in_with_password(emu, user1["email"], "notasecret")["localId"] == user1["localId"]

    # Adapted: no phone sign-in; the overwritten user looked up by localId.
    info2 = get_account_info_by_local_id(emu, user2["localId"])
    assert info2["phoneNumber"] == user2["phoneNumber"], info2
    assert not info2.get("email"), info2  # gone
    assert not info2.get("passwordHash"), info2  # gone
    assert info2["displayName"] == user2["displayName"], info2  # overwritten
    expect_error(call(emu, "signInWithPassword", {"email": old_email, "password": "hawaii"}), "EMAIL_NOT_FOUND")


def test_should_import_identity_provider_info(emu):
    """batch.spec.ts: should import identity provider info"""
    email, provider_id, raw_id = unique_email("foo"), "google.com", unique_id("0123456")
    user1 = {"localId": unique_id("foo"), "email": email,
             "providerUserInfo": [{"providerId": provider_id, "rawId": raw_id, "displayName": "Foo", "email": email}]}
    no_errors(answer(batch_create(emu, {"users": [user1]})))

    assert get_signin_methods(emu, email) == [provider_id]
    assert sign_in_with_fake_claims(emu, provider_id, {"sub": raw_id})["localId"] == user1["localId"]


# --------------------------------------------------------------------------- accounts:batchDelete
def _anon_and_password_user(emu) -> tuple:
    user1 = register_anon_user(emu)
    user2 = register_user(emu, unique_email("foobar"), "barbaz")
    return user1, user2


def test_should_delete_specified_disabled_accounts(emu):
    """batch.spec.ts: should delete specified disabled accounts"""
    user1, user2 = _anon_and_password_user(emu)
    update_account_by_local_id(emu, user1["localId"], {"disableUser": True})
    update_account_by_local_id(emu, user2["localId"], {"disableUser": True})
    no_errors(answer(batch_delete(emu, {"localIds": [user1["localId"], user2["localId"]]})), "errors")
    assert lookup_local_ids(emu, user1["localId"], user2["localId"]) == []


def test_should_error_for_accounts_not_disabled(emu):
    """batch.spec.ts: should error for accounts not disabled"""
    user1, user2 = _anon_and_password_user(emu)
    update_account_by_local_id(emu, user2["localId"], {"disableUser": True})  # user1 not disabled
    body = answer(batch_delete(emu, {"localIds": [user1["localId"], user2["localId"]]}))
    assert body.get("errors") == [{"index": 0, "localId": user1["localId"], "message": NOT_DISABLED}], body
    assert lookup_local_ids(emu, user1["localId"], user2["localId"]) == [user1["localId"]]


def test_should_delete_disabled_and_not_disabled_accounts_with_force_true(emu):
    """batch.spec.ts: should delete disabled and not disabled accounts with force: true"""
    user1, user2 = _anon_and_password_user(emu)
    update_account_by_local_id(emu, user2["localId"], {"disableUser": True})  # user1 not disabled
    body = answer(batch_delete(emu, {"localIds": [user1["localId"], user2["localId"]], "force": True}))
    no_errors(body, "errors")
    assert lookup_local_ids(emu, user1["localId"], user2["localId"]) == []


def test_should_not_report_errors_for_nonexistent_local_ids(emu):
    """batch.spec.ts: should not report errors for nonexistent localIds"""
    no_errors(answer(batch_delete(emu, {"localIds": ["nosuch", "nosuch2"]})), "errors")
    no_errors(answer(batch_delete(emu, {"localIds": ["nosuch", "nosuch2"], "force": True})), "errors")


def test_should_error_if_local_ids_array_is_empty(emu):
    """batch.spec.ts: should error if localIds array is empty"""
    expect_error(batch_delete(emu, {"localIds": [], "force": True}), "LOCAL_ID_LIST_EXCEEDS_LIMIT", exact=True)


def test_should_error_if_local_id_count_is_more_than_limit(emu):
    """batch.spec.ts: should error if localId count is more than limit"""
    local_ids_ = [f"localId-{i}" for i in range(1000)]
    no_errors(answer(batch_delete(emu, {"localIds": local_ids_, "force": True})), "errors")  # right at the limit
    local_ids_.append("extraOne")
    resp = batch_delete(emu, {"localIds": local_ids_, "force": True})
    expect_status(400, resp)
    expect_error(resp, "LOCAL_ID_LIST_EXCEEDS_LIMIT", exact=True)

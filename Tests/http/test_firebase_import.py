"""Moving users off Firebase with the real firebase-admin Python SDK pointed at `herald serve`
(FIREBASE_AUTH_EMULATOR_HOST, `Bearer owner`): `import_users` with each of Firebase's password
hash algorithms, the hashes made here in Python by implementations independent of Herald
(hashlib, hmac, the `bcrypt` package, `cryptography`'s AES-CTR for Firebase's modified scrypt,
see Tests/support/make_hash_vectors.py) and the published firebase/scrypt README vector; each
imported password then signs in over REST (`accounts:signInWithPassword`), a wrong one is refused,
and the first successful sign-in replaces the imported hash with Herald's own in the ledger.

Also `list_users` paging (`accounts:batchGet`, uid order, a page token whenever a page is full),
`delete_users`, per-user import errors (`UserImportResult`), and over raw HTTP with the admin
token: `accounts:query`, `accounts:batchDelete` without force, v3 `uploadAccount` /
`downloadAccount`, and the admin-only rule for all of them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid

import bcrypt
import pytest
import requests

from firebase_admin import auth

import make_hash_vectors as vectors  # Tests/support: the Firebase hash algorithms in Python
from helpers import API_KEY, CaptureServer, deep_merge, query
from http_support import (
    ADMIN_PREFIX, ADMIN_TOKEN, BASE_OVERRIDES, HTTP_TIMEOUT, PROJECT, HeraldServer, assert_error, ok, unique_email,
    write_serve_config,
)

# What the SDK's `Bearer owner` needs of Herald.
SDK_SERVER = {"allowEmulatorOwner": True}
NOT_DISABLED = "NOT_DISABLED : Disable the account before batch deletion."
V3 = "/www.googleapis.com/identitytoolkit/v3/relyingparty/"
PASSWORDS = ["correct horse battery", "pässwörd ✓ 2"]  # ASCII and non-ASCII (hashed as UTF-8)
SALT_SEPARATOR = b"\x07"
SIGNER_KEY = hashlib.sha512(b"herald import signer key").digest()  # 64 bytes, as Firebase's
HMAC_KEY = b"herald import hmac key"

# The firebase/scrypt README: a project's hash parameters and one exported user.
README_KEY = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA=="
README_SEPARATOR = "Bw=="
README_HASH = "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
README_SALT = "42xEC+ixf3L2lw=="
README_PASSWORD = "user1password"


@pytest.fixture(scope="module")
def shared(herald_bin, tmp_path_factory):
    """One server (SDK_SERVER) for the module's tests that need no empty project or config of their
    own: they use uids and emails of their own. Starting a server and its first sign-in cost about a
    second in a debug build; the algorithm cases share that."""
    capture = CaptureServer()
    capture.start()
    settings = deep_merge(BASE_OVERRIDES, {"server": SDK_SERVER})
    cwd = tmp_path_factory.mktemp("import-shared")
    srv = HeraldServer(herald_bin, write_serve_config(cwd, capture, settings), cwd, capture, (), settings)
    try:
        srv.wait_ready()
        yield srv
        if not srv.running:
            srv.kill()
            pytest.fail(f"herald serve died during the tests (exit {srv.proc.returncode})\n{srv.describe()}",
                        pytrace=False)
        code = srv.stop()
        assert code == 0, f"herald serve exited {code} on SIGTERM (expected 0)\n{srv.describe()}"
    finally:
        srv.kill()
        capture.stop()


# --------------------------------------------------------------------------- helpers
def new_uid(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:12]}"


def wrong_password_code(srv) -> str:
    """Under enumeration protection (the default) a wrong password is INVALID_LOGIN_CREDENTIALS."""
    protected = srv.settings.get("server", {}).get("enumerationProtection", True)
    return "INVALID_LOGIN_CREDENTIALS" if protected else "INVALID_PASSWORD"


def stored_hash(srv, uid: str):
    """The account's `password_hash` column (read from a snapshot of the ledger)."""
    rows = query(srv.db_path, "SELECT password_hash FROM accounts WHERE uid = ?", (uid,))
    assert len(rows) == 1, f"no account {uid} in the ledger"
    return rows[0]["password_hash"]


def stored_prefix(algorithm: str) -> str:
    """How Herald stores an imported hash until the first sign-in: `firebase-<algorithm>$…`."""
    return "firebase-" + algorithm.lower().replace("_", "-") + "$"


def check_imported_result(result, count: int) -> None:
    assert (result.success_count, result.failure_count) == (count, 0), [(e.index, e.reason) for e in result.errors]
    assert result.errors == []


def check_sign_in_and_rehash(srv, uid: str, email: str, password: str, algorithm: str, *, thorough: bool = True) -> dict:
    """A wrong password is refused and leaves the imported hash; the right one signs in and leaves
    Herald's own hash (`pbkdf2-sha256$…`); it signs in again afterwards (and, `thorough`, a wrong
    one is still refused). Returns the first session."""
    before = stored_hash(srv, uid)
    assert before.startswith(stored_prefix(algorithm)), before
    assert_error(srv.sign_in(email, password + "!"), wrong_password_code(srv))
    assert stored_hash(srv, uid) == before, "a failed sign-in must not touch the imported hash"

    first = ok(srv.sign_in(email, password))
    assert first["localId"] == uid and first["email"] == email and first.get("idToken"), first
    after = stored_hash(srv, uid)
    assert after.startswith("pbkdf2-sha256$"), f"{algorithm}: not rehashed on first sign-in: {after[:40]}"
    assert password not in after

    again = ok(srv.sign_in(email, password))
    assert again["localId"] == uid
    assert stored_hash(srv, uid) == after, "the second sign-in keeps Herald's hash"
    if thorough:
        assert_error(srv.sign_in(email, password + "!"), wrong_password_code(srv))
    return first


def batch_get(srv, **params) -> dict:
    """GET accounts:batchGet as the administrator."""
    resp = requests.get(srv.url + ADMIN_PREFIX + "accounts:batchGet", params=params, timeout=HTTP_TIMEOUT,
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    return ok(resp)


def bytewise(uids) -> list:
    return sorted(uids, key=lambda uid: uid.encode())


def import_plain(srv, uids, **extra) -> None:
    """Users without passwords, over raw HTTP, in batches of at most 1,000."""
    uids = list(uids)
    for start in range(0, len(uids), 1000):
        users = [{"localId": uid, **extra} for uid in uids[start:start + 1000]]
        body = ok(srv.admin("accounts:batchCreate", {"users": users}))
        assert not body.get("error"), body


# --------------------------------------------------------------------------- Firebase's modified scrypt
def test_firebase_scrypt_passwords_sign_in_and_are_rehashed(shared, admin_app):
    srv = shared
    app = admin_app(srv)
    users = []
    for i, password in enumerate(PASSWORDS):
        salt = hashlib.sha256(f"salt-{i}".encode()).digest()[:16]
        hashed = vectors.firebase_scrypt(password.encode(), salt, SALT_SEPARATOR, SIGNER_KEY, 8, 14)
        users.append((new_uid("scrypt"), unique_email(f"scrypt-{i}"), password, hashed, salt))
    records = [auth.ImportUserRecord(uid=uid, email=email, password_hash=hashed, password_salt=salt)
               for uid, email, _, hashed, salt in users]
    result = auth.import_users(records, hash_alg=auth.UserImportHash.scrypt(
        key=SIGNER_KEY, salt_separator=SALT_SEPARATOR, rounds=8, memory_cost=14), app=app)
    check_imported_result(result, len(users))

    for uid, email, password, _, _ in users:
        fetched = auth.get_user(uid, app=app)
        assert fetched.email == email and "password" in [p.provider_id for p in fetched.provider_data]
        session = check_sign_in_and_rehash(srv, uid, email, password, "SCRYPT")
        # Replacing the hash is not a password change: the session of that first sign-in lives on.
        refreshed = requests.post(srv.url + "/securetoken.googleapis.com/v1/token", params={"key": API_KEY},
                                  data={"grant_type": "refresh_token", "refresh_token": session["refreshToken"]},
                                  timeout=HTTP_TIMEOUT)
        assert refreshed.status_code == 200 and refreshed.json()["user_id"] == uid, refreshed.text
        assert auth.verify_id_token(session["idToken"], app=app)["uid"] == uid
    # Someone else's imported password is not this user's.
    (_, email0, _, _, _), (_, _, password1, _, _) = users
    assert_error(srv.sign_in(email0, password1), wrong_password_code(srv))


def test_the_firebase_scrypt_readme_vector_signs_in(shared, admin_app):
    """The hash parameters and user of the firebase/scrypt README: once through the SDK (which
    sends url-safe base64) and once over raw HTTP with the README's standard base64 verbatim."""
    key, separator = base64.b64decode(README_KEY), base64.b64decode(README_SEPARATOR)
    salt, hashed = base64.b64decode(README_SALT), base64.b64decode(README_HASH)
    assert vectors.firebase_scrypt(README_PASSWORD.encode(), salt, separator, key, 8, 14) == hashed, \
        "the Python firebase_scrypt no longer reproduces the README"

    srv = shared
    app = admin_app(srv)
    uid, email = "kYi4EvWQlQTKSfnJ3dRSP6IH3ed2", "user1@test.com"
    record = auth.ImportUserRecord(
        uid=uid, email=email, display_name="Test User 1", password_hash=hashed, password_salt=salt,
        user_metadata=auth.UserMetadata(creation_timestamp=1508893925000, last_sign_in_timestamp=1508893925000))
    result = auth.import_users([record], hash_alg=auth.UserImportHash.scrypt(
        key=key, salt_separator=separator, rounds=8, memory_cost=14), app=app)
    check_imported_result(result, 1)
    user = auth.get_user(uid, app=app)
    assert (user.email, user.display_name) == (email, "Test User 1")
    assert user.user_metadata.creation_timestamp == 1508893925000
    check_sign_in_and_rehash(srv, uid, email, README_PASSWORD, "SCRYPT", thorough=False)

    raw_uid, raw_email = new_uid("readme-raw"), unique_email("readme-raw")
    body = ok(srv.admin("accounts:batchCreate", {
        "hashAlgorithm": "SCRYPT", "signerKey": README_KEY, "saltSeparator": README_SEPARATOR, "rounds": 8,
        "memoryCost": 14,
        "users": [{"localId": raw_uid, "email": raw_email, "passwordHash": README_HASH, "salt": README_SALT}]}))
    assert not body.get("error"), body
    check_sign_in_and_rehash(srv, raw_uid, raw_email, README_PASSWORD, "SCRYPT", thorough=False)


# --------------------------------------------------------------------------- the other algorithms
def _salted(password: bytes, salt: bytes) -> bytes:
    return vectors.ordered(password, salt, None)  # Firebase's default order: salt, then password


# name -> (the SDK's UserImportHash, hash(password, salt) -> bytes, whether the user has a salt)
ALGORITHMS = {
    "STANDARD_SCRYPT": (lambda: auth.UserImportHash.standard_scrypt(
        memory_cost=1024, parallelization=2, block_size=8, derived_key_length=64),
        lambda pw, salt: hashlib.scrypt(pw, salt=salt, n=1024, r=8, p=2, dklen=64), True),
    "BCRYPT": (auth.UserImportHash.bcrypt, lambda pw, salt: bcrypt.hashpw(pw, bcrypt.gensalt(rounds=5)), False),
    "PBKDF2_SHA256": (lambda: auth.UserImportHash.pbkdf2_sha256(rounds=1000),
                      lambda pw, salt: hashlib.pbkdf2_hmac("sha256", pw, salt, 1000, 32), True),
    "PBKDF_SHA1": (lambda: auth.UserImportHash.pbkdf_sha1(rounds=500),
                   lambda pw, salt: hashlib.pbkdf2_hmac("sha1", pw, salt, 500, 20), True),
    "HMAC_SHA512": (lambda: auth.UserImportHash.hmac_sha512(key=HMAC_KEY),
                    lambda pw, salt: hmac.new(HMAC_KEY, _salted(pw, salt), "sha512").digest(), True),
    "HMAC_SHA256": (lambda: auth.UserImportHash.hmac_sha256(key=HMAC_KEY),
                    lambda pw, salt: hmac.new(HMAC_KEY, _salted(pw, salt), "sha256").digest(), True),
    "HMAC_SHA1": (lambda: auth.UserImportHash.hmac_sha1(key=HMAC_KEY),
                  lambda pw, salt: hmac.new(HMAC_KEY, _salted(pw, salt), "sha1").digest(), True),
    "HMAC_MD5": (lambda: auth.UserImportHash.hmac_md5(key=HMAC_KEY),
                 lambda pw, salt: hmac.new(HMAC_KEY, _salted(pw, salt), "md5").digest(), True),
    "SHA512": (lambda: auth.UserImportHash.sha512(rounds=10),
               lambda pw, salt: vectors.iterated("sha512", _salted(pw, salt), 10), True),
    "SHA256": (lambda: auth.UserImportHash.sha256(rounds=1),
               lambda pw, salt: vectors.iterated("sha256", _salted(pw, salt), 1), True),
    "SHA1": (lambda: auth.UserImportHash.sha1(rounds=3),
             lambda pw, salt: vectors.iterated("sha1", _salted(pw, salt), 3), True),
    # rounds 0 is one hash (firebase-admin allows 0 for MD5 only).
    "MD5": (lambda: auth.UserImportHash.md5(rounds=0),
            lambda pw, salt: hashlib.md5(_salted(pw, salt)).digest(), True),
}


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_each_firebase_hash_algorithm_signs_in_and_is_rehashed(shared, admin_app, algorithm):
    """One user per algorithm, with a non-ASCII password (hashed as UTF-8)."""
    make_alg, make_hash, salted = ALGORITHMS[algorithm]
    srv = shared
    app = admin_app(srv)
    uid, email, password = new_uid(algorithm.lower()), unique_email(algorithm.lower()), PASSWORDS[1]
    salt = f"{algorithm}-salt".encode() if salted else b""
    record = auth.ImportUserRecord(uid=uid, email=email, password_hash=make_hash(password.encode(), salt),
                                   password_salt=salt or None)
    check_imported_result(auth.import_users([record], hash_alg=make_alg(), app=app), 1)
    check_sign_in_and_rehash(srv, uid, email, password, algorithm, thorough=False)


@pytest.mark.parametrize("protected", [True, False], ids=["protected", "unprotected"])
def test_a_wrong_imported_password_follows_enumeration_protection(server, admin_app, protected):
    srv = server(server={**SDK_SERVER, "enumerationProtection": protected})
    app = admin_app(srv)
    uid, email, salt = new_uid("enum"), unique_email("enum"), b"enum-salt"
    hashed = hmac.new(HMAC_KEY, _salted(b"the right one", salt), "sha256").digest()
    check_imported_result(auth.import_users(
        [auth.ImportUserRecord(uid=uid, email=email, password_hash=hashed, password_salt=salt)],
        hash_alg=auth.UserImportHash.hmac_sha256(key=HMAC_KEY), app=app), 1)
    assert_error(srv.sign_in(email, "the wrong one"), "INVALID_LOGIN_CREDENTIALS" if protected else "INVALID_PASSWORD")
    assert stored_hash(srv, uid).startswith(stored_prefix("HMAC_SHA256"))
    assert ok(srv.sign_in(email, "the right one"))["localId"] == uid


# --------------------------------------------------------------------------- what an import keeps
def test_imported_fields_come_back_through_the_sdk(shared, admin_app):
    srv = shared
    app = admin_app(srv)
    uid, email, google_email = new_uid("fields"), unique_email("fields"), unique_email("fields-google")
    record = auth.ImportUserRecord(
        uid=uid, email=email, email_verified=True, display_name="Ada Imported", photo_url="https://example.com/ada.png",
        phone_number="+15555550123", disabled=True, custom_claims={"role": "admin", "level": 3},
        user_metadata=auth.UserMetadata(creation_timestamp=1500000000000, last_sign_in_timestamp=1600000000000),
        provider_data=[auth.UserProvider(uid="google-123", provider_id="google.com", email=google_email,
                                         display_name="Ada G")])
    check_imported_result(auth.import_users([record], app=app), 1)
    user = auth.get_user(uid, app=app)
    assert (user.email, user.email_verified, user.display_name) == (email, True, "Ada Imported")
    assert (user.photo_url, user.phone_number, user.disabled) == ("https://example.com/ada.png", "+15555550123", True)
    assert user.custom_claims == {"role": "admin", "level": 3}
    assert user.user_metadata.creation_timestamp == 1500000000000
    assert user.user_metadata.last_sign_in_timestamp == 1600000000000
    google = [p for p in user.provider_data if p.provider_id == "google.com"]
    assert len(google) == 1 and google[0].uid == "google-123" and google[0].email == google_email, user.provider_data
    assert "password" not in [p.provider_id for p in user.provider_data], "no password was imported"
    assert stored_hash(srv, uid) is None


def test_per_user_errors_leave_the_rest_imported(shared, admin_app):
    srv = shared
    app = admin_app(srv)
    good = [(new_uid("good"), unique_email("good"), f"good password {i}") for i in range(2)]
    bad_uid, bad_email = new_uid("bad"), unique_email("bad")
    salt = b"per-user-salt"

    def mac(password: str) -> bytes:
        return hmac.new(HMAC_KEY, _salted(password.encode(), salt), "sha256").digest()

    # Through the SDK: the middle user's hash is 5 bytes where HMAC_SHA256 makes 32.
    records = [auth.ImportUserRecord(uid=good[0][0], email=good[0][1], password_hash=mac(good[0][2]), password_salt=salt),
               auth.ImportUserRecord(uid=bad_uid, email=bad_email, password_hash=b"short", password_salt=salt),
               auth.ImportUserRecord(uid=good[1][0], email=good[1][1], password_hash=mac(good[1][2]), password_salt=salt)]
    result = auth.import_users(records, hash_alg=auth.UserImportHash.hmac_sha256(key=HMAC_KEY), app=app)
    assert (result.success_count, result.failure_count) == (2, 1)
    [error] = result.errors
    assert error.index == 1, (error.index, error.reason)
    assert isinstance(error.reason, str) and error.reason.startswith("INVALID_PASSWORD_HASH"), error.reason
    for uid, email, password in good:
        assert ok(srv.sign_in(email, password))["localId"] == uid
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(bad_uid, app=app)

    # Over raw HTTP: a hash that is not base64 at all, and a good user after it.
    raw_bad, raw_good = new_uid("raw-bad"), (new_uid("raw-good"), unique_email("raw-good"), "raw good password")
    body = ok(srv.admin("accounts:batchCreate", {
        "hashAlgorithm": "HMAC_SHA256", "signerKey": vectors.b64url(HMAC_KEY),
        "users": [{"localId": raw_bad, "email": unique_email("raw-bad"), "passwordHash": "*** not base64 ***",
                   "salt": vectors.b64url(salt)},
                  {"localId": raw_good[0], "email": raw_good[1], "passwordHash": vectors.b64url(mac(raw_good[2])),
                   "salt": vectors.b64url(salt)}]}))
    errors = body.get("error")
    assert isinstance(errors, list) and len(errors) == 1 and errors[0]["index"] == 0, body
    assert set(errors[0]) == {"index", "message"} and errors[0]["message"].startswith("INVALID_PASSWORD_HASH"), body
    assert ok(srv.sign_in(raw_good[1], raw_good[2]))["localId"] == raw_good[0]
    assert ok(srv.admin("accounts:lookup", {"localId": [raw_bad]})).get("users", []) == []


def test_a_batch_with_hashes_needs_a_hash_algorithm(shared):
    srv = shared
    uid = new_uid("no-alg")
    resp = srv.admin("accounts:batchCreate", {"users": [
        {"localId": uid, "email": unique_email("no-alg"), "passwordHash": vectors.b64url(b"x" * 32)}]})
    assert_error(resp, "MISSING_HASH_ALGORITHM")
    assert ok(srv.admin("accounts:lookup", {"localId": [uid]})).get("users", []) == []


# --------------------------------------------------------------------------- listing and deleting
def test_list_users_pages_in_uid_order_and_delete_users(server, admin_app):
    srv = server(server=SDK_SERVER)
    app = admin_app(srv)
    uids = [f"list-{i:02d}" for i in range(25)]
    shuffled = uids[1::2] + uids[0::2]  # imported out of order
    check_imported_result(auth.import_users(
        [auth.ImportUserRecord(uid=uid, email=f"{uid}@x.test") for uid in shuffled], app=app), 25)

    first = auth.list_users(max_results=10, app=app)
    assert [u.uid for u in first.users] == uids[:10]
    assert first.has_next_page and first.next_page_token == uids[9]
    second = first.get_next_page()
    assert [u.uid for u in second.users] == uids[10:20] and second.has_next_page
    third = second.get_next_page()
    assert [u.uid for u in third.users] == uids[20:]
    assert not third.has_next_page and third.get_next_page() is None
    assert [u.email for u in first.users] == [f"{uid}@x.test" for uid in uids[:10]]

    assert [u.uid for u in auth.list_users(app=app).iterate_all()] == uids
    assert [u.uid for u in auth.list_users(max_results=7, app=app).iterate_all()] == uids

    deleted = auth.delete_users(uids[:5] + ["list-no-such-uid"], app=app)
    assert (deleted.success_count, deleted.failure_count, deleted.errors) == (6, 0, [])
    assert [u.uid for u in auth.list_users(app=app).iterate_all()] == uids[5:]
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(uids[0], app=app)


def test_batch_get_pages_by_uid_bytes_with_default_and_maximum_sizes(server):
    srv = server()
    odd = ["Zeta", "alpha", "_under", "ä-umlaut", "0zero", "B", "a", "é", "~tilde", "a-b", "a_b", "aa"]
    uids = odd + [f"fill-{i:02d}" for i in range(12)]
    import_plain(srv, uids)
    expected = bytewise(uids)

    page = batch_get(srv)  # maxResults defaults to 20
    assert page["kind"] == "identitytoolkit#DownloadAccountResponse", page
    assert [u["localId"] for u in page["users"]] == expected[:20]
    assert page["nextPageToken"] == expected[19]
    rest = batch_get(srv, nextPageToken=page["nextPageToken"])
    assert [u["localId"] for u in rest["users"]] == expected[20:] and "nextPageToken" not in rest, rest

    # A page that is exactly full still has a token; the page after it is empty, without one.
    full = batch_get(srv, maxResults=len(uids))
    assert [u["localId"] for u in full["users"]] == expected and full["nextPageToken"] == expected[-1]
    empty = batch_get(srv, maxResults=len(uids), nextPageToken=full["nextPageToken"])
    assert empty.get("users", []) == [] and "nextPageToken" not in empty, empty

    # v3 downloadAccount: the same pages, its parameters in the body.
    legacy = ok(requests.post(srv.url + V3 + "downloadAccount", json={"targetProjectId": PROJECT, "maxResults": 5},
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=HTTP_TIMEOUT))
    assert [u["localId"] for u in legacy["users"]] == expected[:5] and legacy["nextPageToken"] == expected[4]
    legacy = ok(requests.post(srv.url + V3 + "downloadAccount",
                              json={"targetProjectId": PROJECT, "nextPageToken": legacy["nextPageToken"]},
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=HTTP_TIMEOUT))
    assert [u["localId"] for u in legacy["users"]] == expected[5:], legacy

    # No more than 1,000 a page, however many are asked for.
    many = [f"many-{i:04d}" for i in range(1001)]
    import_plain(srv, many)
    everyone = bytewise(uids + many)
    big = batch_get(srv, maxResults=5000)
    assert len(big["users"]) == 1000 and big["nextPageToken"] == everyone[999]
    tail = batch_get(srv, maxResults=5000, nextPageToken=big["nextPageToken"])
    assert [u["localId"] for u in tail["users"]] == everyone[1000:] and "nextPageToken" not in tail


# --------------------------------------------------------------------------- accounts:query
def test_accounts_query_counts_and_finds_by_email_and_uid(server):
    srv = server()
    emails = [unique_email(f"query-{i}") for i in range(3)]
    uids = [srv.sign_up(email, "query password")["localId"] for email in emails]
    import_plain(srv, [new_uid("query-plain")])

    count = ok(srv.admin("accounts:query", {"returnUserInfo": False}))
    assert int(count["recordsCount"]) == 4 and "userInfo" not in count, count

    found = ok(srv.admin("accounts:query", {"expression": [{"email": emails[1]}]}))
    assert int(found["recordsCount"]) == 1, found
    [user] = found["userInfo"]
    assert (user["localId"], user["email"]) == (uids[1], emails[1]), found

    by_uid = ok(srv.admin("accounts:query", {"expression": [{"userId": uids[2]}, {"email": emails[0]}]}))
    assert sorted(u["localId"] for u in by_uid["userInfo"]) == sorted([uids[0], uids[2]]), by_uid

    nobody = ok(srv.admin("accounts:query", {"expression": [{"email": unique_email("query-nobody")}]}))
    assert int(nobody["recordsCount"]) == 0 and nobody.get("userInfo", []) == [], nobody

    everyone = ok(srv.admin("accounts:query", {}))
    assert int(everyone["recordsCount"]) == 4 and len(everyone["userInfo"]) == 4, everyone


# --------------------------------------------------------------------------- accounts:batchDelete
def test_batch_delete_without_force_deletes_only_disabled_accounts(shared):
    srv = shared
    enabled_email = unique_email("bd-enabled")
    enabled = srv.sign_up(enabled_email, "batch delete pw")["localId"]
    disabled, disabled_email = new_uid("bd-disabled"), unique_email("bd-disabled")
    body = ok(srv.admin("accounts:batchCreate", {"users": [{"localId": disabled, "email": disabled_email,
                                                             "disabled": True}]}))
    assert not body.get("error"), body

    body = ok(srv.admin("accounts:batchDelete", {"localIds": ["bd-no-such-uid", enabled, disabled]}))
    assert body.get("errors") == [{"index": 1, "localId": enabled, "message": NOT_DISABLED}], body
    assert srv.admin_user(enabled_email)["localId"] == enabled
    assert ok(srv.sign_in(enabled_email, "batch delete pw"))["localId"] == enabled
    assert srv.admin_user(disabled_email) is None

    assert_error(srv.admin("accounts:batchDelete", {"localIds": []}), "LOCAL_ID_LIST_EXCEEDS_LIMIT")
    assert_error(srv.admin("accounts:batchDelete", {"localIds": [f"x-{i}" for i in range(1001)], "force": True}),
                 "LOCAL_ID_LIST_EXCEEDS_LIMIT")
    assert ok(srv.admin("accounts:batchDelete", {"localIds": [enabled], "force": True})).get("errors") in (None, [])
    assert srv.admin_user(enabled_email) is None


def test_batch_methods_are_for_the_administrator_only(shared):
    srv = shared
    email = unique_email("batch-app")
    uid = srv.sign_up(email, "batch app password")["localId"]
    sneaky, sneaky_v3 = new_uid("sneaky"), new_uid("sneaky-v3")
    auth_api = [("accounts:batchCreate", {"users": [{"localId": sneaky}]}),
                ("accounts:batchDelete", {"localIds": [uid], "force": True}),
                ("accounts:query", {"returnUserInfo": False})]
    for method, body in auth_api:
        assert_error(srv.post(method, body), "INSUFFICIENT_PERMISSION")
    resp = requests.get(srv.url + "/v1/accounts:batchGet", params={"key": API_KEY}, timeout=HTTP_TIMEOUT)
    assert_error(resp, "INSUFFICIENT_PERMISSION")
    assert "users" not in resp.text
    resp = requests.post(srv.url + V3 + "uploadAccount", params={"key": API_KEY}, timeout=HTTP_TIMEOUT,
                         json={"users": [{"localId": sneaky_v3}]})
    assert_error(resp, "INSUFFICIENT_PERMISSION")
    # Nothing changed.
    found = ok(srv.admin("accounts:lookup", {"localId": [uid, sneaky, sneaky_v3]})).get("users", [])
    assert [u["localId"] for u in found] == [uid], found


def test_import_refuses_what_firebase_refuses_batch_wide(shared, admin_app):
    """Batch-wide refusals write nothing: a uid twice, and over 1,000 users."""
    srv = shared
    uid = new_uid("twice")
    assert_error(srv.admin("accounts:batchCreate", {"users": [{"localId": uid}, {"localId": uid}]}),
                 "DUPLICATE_LOCAL_ID", message=f"DUPLICATE_LOCAL_ID : {uid}")
    assert_error(srv.admin("accounts:batchCreate", {"users": [{"localId": f"big-{i}"} for i in range(1001)]}),
                 "INVALID_ARGUMENT")
    assert_error(srv.admin("accounts:batchCreate", {"users": []}), "MISSING_USER_ACCOUNT")
    assert ok(srv.admin("accounts:lookup", {"localId": [uid, "big-0", "big-1000"]})).get("users", []) == []
    # The SDK checks the size itself.
    app = admin_app(srv)
    with pytest.raises(ValueError):
        auth.import_users([auth.ImportUserRecord(uid=f"big-{i}") for i in range(1001)], app=app)


def test_custom_claims_are_kept_as_json_text(shared):
    srv = shared
    uid = new_uid("claims")
    claims = {"role": "editor", "tiers": [1, 2]}
    body = ok(srv.admin("accounts:batchCreate", {"users": [{"localId": uid, "customAttributes": json.dumps(claims)}]}))
    assert not body.get("error"), body
    [user] = ok(srv.admin("accounts:lookup", {"localId": [uid]}))["users"]
    assert json.loads(user["customAttributes"]) == claims, user


def test_imported_phone_numbers_are_found_and_never_shared(shared, admin_app):
    srv = shared
    app = admin_app(srv)
    first, second = new_uid("phone-a"), new_uid("phone-b")
    number = f"+1555{uuid.uuid4().int % 10**7:07d}"
    check_imported_result(auth.import_users([auth.ImportUserRecord(uid=first, phone_number=number)], app=app), 1)
    assert auth.get_user_by_phone_number(number, app=app).uid == first
    found = ok(srv.admin("accounts:query", {"expression": [{"phoneNumber": number}]}))
    assert [user["localId"] for user in found["userInfo"]] == [first], found

    body = ok(srv.admin("accounts:batchCreate", {"users": [{"localId": second, "phoneNumber": number}]}))
    assert body.get("error") == [{"index": 0, "message": "phone number exists in other account in database"}], body
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(second, app=app)


def test_query_offsets_are_bounded_and_paged_in_the_ledger(shared):
    srv = shared
    huge = srv.admin("accounts:query", {"offset": "9223372036854775807", "limit": "2"})
    assert_error(huge, "INVALID_ARGUMENT")
    total = int(ok(srv.admin("accounts:query", {"returnUserInfo": False}))["recordsCount"])
    past = ok(srv.admin("accounts:query", {"offset": str(total), "limit": "5"}))
    assert int(past["recordsCount"]) == total and past.get("userInfo", []) == [], past
    everyone = [user["localId"] for user in ok(srv.admin("accounts:query", {"limit": "500"}))["userInfo"]]
    second = ok(srv.admin("accounts:query", {"offset": "1", "limit": "2"}))["userInfo"]
    assert [user["localId"] for user in second] == everyone[1:3]


def test_batch_get_answers_only_get_and_unknown_methods_are_not_found(shared):
    srv = shared
    wrong = srv.admin("accounts:batchGet", {})
    assert wrong.status_code == 405 and wrong.headers["Allow"] == "GET, HEAD", (wrong.status_code, wrong.headers)
    unknown = srv.admin("accounts:noSuchMethod", {})
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "NOT_FOUND", unknown.text

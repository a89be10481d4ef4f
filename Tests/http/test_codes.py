"""Redeeming codes over the API: resetPassword, update, signInWithEmailLink;
single use under concurrency, supersede, expiry, sessions that die, events."""

from __future__ import annotations

import sqlite3
import threading
import time

import requests

from helpers import API_KEY, action_link, parse_link
from http_support import (
    CONTINUE, HTTP_TIMEOUT, KIND, assert_envelope, assert_error, code_of, error_code, is_jwt, ok, unique_email,
)

PASSWORD = "first-password-1"
NEW_PASSWORD = "second-password-2"
MISMATCH = "INVALID_EMAIL : The email provided does not match the sign-in email address."


def next_second() -> None:
    """validSince has one-second resolution: make 'earlier' tokens strictly earlier."""
    time.sleep(1.1)


def sign_in_code(srv, email: str) -> str:
    return srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True)["oobCode"]


# --------------------------------------------------------------------------- resetPassword
def test_reset_password_inspects_without_consuming_then_consumes(server):
    srv = server()
    email = unique_email("inspect")
    srv.sign_up(email, PASSWORD)
    code = srv.oob("PASSWORD_RESET", email)["oobCode"]
    for _ in range(2):
        body = ok(srv.post("accounts:resetPassword", {"oobCode": code}))
        assert body == {"kind": KIND["resetPassword"], "requestType": "PASSWORD_RESET", "email": email}, body

    body = ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    assert body["kind"] == KIND["resetPassword"]
    assert body["email"] == email and body["requestType"] == "PASSWORD_RESET"
    ok(srv.sign_in(email, NEW_PASSWORD))
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")
    assert_error(srv.post("accounts:resetPassword", {"oobCode": code}), "INVALID_OOB_CODE")
    assert_error(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": "third-password-3"}),
                 "INVALID_OOB_CODE")
    ok(srv.sign_in(email, NEW_PASSWORD))


def test_weak_new_password_is_refused_and_the_code_survives(server):
    srv = server()
    email = unique_email("weak")
    srv.sign_up(email, PASSWORD)
    code = srv.oob("PASSWORD_RESET", email)["oobCode"]
    assert_error(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": "12345"}), "WEAK_PASSWORD")
    ok(srv.sign_in(email, PASSWORD))
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    ok(srv.sign_in(email, NEW_PASSWORD))


def test_password_reset_ends_earlier_sessions_and_verifies_the_email(server):
    srv = server()
    email = unique_email("sessions")
    old_token = srv.sign_up(email, PASSWORD)["idToken"]
    ok(srv.lookup(old_token))
    next_second()
    code = srv.oob("PASSWORD_RESET", email)["oobCode"]
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    assert_error(srv.lookup(old_token), "TOKEN_EXPIRED")
    new_token = ok(srv.sign_in(email, NEW_PASSWORD))["idToken"]
    [user] = ok(srv.lookup(new_token))["users"]
    assert user["emailVerified"] is True, "redeeming a reset link proves the mailbox"


def test_codes_only_work_for_their_own_action(server):
    srv = server()
    email = unique_email("crossed")
    srv.sign_up(email, PASSWORD)
    verify = srv.oob("VERIFY_EMAIL", email)["oobCode"]
    reset = srv.oob("PASSWORD_RESET", email)["oobCode"]
    sign_in = sign_in_code(srv, email)

    assert_envelope(srv.post("accounts:resetPassword", {"oobCode": verify, "newPassword": NEW_PASSWORD}))
    assert_envelope(srv.post("accounts:update", {"oobCode": reset}))
    assert_envelope(srv.post("accounts:resetPassword", {"oobCode": sign_in, "newPassword": NEW_PASSWORD}))
    assert_error(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": reset}), "INVALID_OOB_CODE")
    ok(srv.sign_in(email, PASSWORD))

    # None of that burned anything.
    assert ok(srv.post("accounts:update", {"oobCode": verify}))["emailVerified"] is True
    ok(srv.post("accounts:resetPassword", {"oobCode": reset, "newPassword": NEW_PASSWORD}))
    ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": sign_in}))


def test_unknown_codes_are_invalid_oob_code(server):
    srv = server()
    bogus = "A" * 54
    assert_error(srv.post("accounts:resetPassword", {"oobCode": bogus}), "INVALID_OOB_CODE")
    assert_error(srv.post("accounts:resetPassword", {"oobCode": bogus, "newPassword": NEW_PASSWORD}),
                 "INVALID_OOB_CODE")
    assert_error(srv.post("accounts:update", {"oobCode": bogus}), "INVALID_OOB_CODE")
    assert_error(srv.post("accounts:signInWithEmailLink", {"email": unique_email("x"), "oobCode": bogus}),
                 "INVALID_OOB_CODE")


# --------------------------------------------------------------------------- expiry
def test_expired_codes_are_expired_not_invalid(server):
    srv = server(links={"lifetime": {"resetPassword": "1s", "signIn": "1s"}})
    email = unique_email("expire")
    srv.sign_up(email, PASSWORD)
    ok(srv.send_oob("PASSWORD_RESET", email))
    ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True))
    codes = {parse_link(link)["params"]["mode"]: code_of(link)
             for link in (action_link(m["message"]) for m in srv.mail_to(email, count=2))}
    reset, sign_in = codes["resetPassword"], codes["signIn"]
    time.sleep(2)

    assert_error(srv.post("accounts:resetPassword", {"oobCode": reset}), "EXPIRED_OOB_CODE")
    assert_error(srv.post("accounts:resetPassword", {"oobCode": reset, "newPassword": NEW_PASSWORD}),
                 "EXPIRED_OOB_CODE")
    assert_error(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": sign_in}), "EXPIRED_OOB_CODE")
    ok(srv.sign_in(email, PASSWORD))
    assert_error(srv.post("accounts:resetPassword", {"oobCode": reset[:-1] + ("A" if reset[-1] != "A" else "B")}),
                 "INVALID_OOB_CODE")


# --------------------------------------------------------------------------- single use, supersede
def _race(n: int, call) -> list:
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=HTTP_TIMEOUT)
            results[i] = call(i)
        except Exception as exc:  # reported below, never swallowed
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "redemption threads hung"
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, f"{len(errors)} requests failed outright: {errors[:3]}"
    return results


def test_fifty_concurrent_redemptions_of_one_reset_code_one_wins(server):
    srv = server()
    email = unique_email("race")
    srv.sign_up(email, PASSWORD)
    code = srv.oob("PASSWORD_RESET", email)["oobCode"]
    url = f"{srv.url}/v1/accounts:resetPassword"

    results = _race(50, lambda i: requests.post(
        url, params={"key": API_KEY}, json={"oobCode": code, "newPassword": f"racer-{i:02d}-pw"},
        timeout=HTTP_TIMEOUT))
    statuses = [r.status_code for r in results]
    winners = [i for i, r in enumerate(results) if r.status_code == 200]
    assert len(winners) == 1, f"expected exactly one 200, got statuses {sorted(statuses)}"
    for i, r in enumerate(results):
        if i != winners[0]:
            assert_error(r, "INVALID_OOB_CODE")
    ok(srv.sign_in(email, f"racer-{winners[0]:02d}-pw"))
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")


def test_fifty_concurrent_email_link_sign_ins_one_wins(server):
    srv = server()
    email = unique_email("racelink")
    code = sign_in_code(srv, email)
    url = f"{srv.url}/v1/accounts:signInWithEmailLink"
    results = _race(50, lambda i: requests.post(url, params={"key": API_KEY},
                                                json={"email": email, "oobCode": code}, timeout=HTTP_TIMEOUT))
    winners = [r for r in results if r.status_code == 200]
    assert len(winners) == 1, f"statuses {sorted(r.status_code for r in results)}"
    assert winners[0].json()["isNewUser"] is True
    for r in results:
        if r.status_code != 200:
            assert_error(r, "INVALID_OOB_CODE")
    assert srv.admin_user(email)["localId"] == winners[0].json()["localId"]


def test_redeeming_a_code_supersedes_its_siblings(server):
    srv = server()
    email, other = unique_email("family"), unique_email("neighbour")
    srv.sign_up(email, PASSWORD)
    srv.sign_up(other, PASSWORD)
    first, second, third = (srv.oob("PASSWORD_RESET", email)["oobCode"] for _ in range(3))
    verify = srv.oob("VERIFY_EMAIL", email)["oobCode"]
    neighbour = srv.oob("PASSWORD_RESET", other)["oobCode"]

    # Every sibling works until one of them is used...
    for code in (first, second, third):
        ok(srv.post("accounts:resetPassword", {"oobCode": code}))
    ok(srv.post("accounts:resetPassword", {"oobCode": second, "newPassword": NEW_PASSWORD}))
    # ...then the others of the same (email, action) are dead,
    for code in (first, third):
        assert_error(srv.post("accounts:resetPassword", {"oobCode": code}), "INVALID_OOB_CODE")
        assert_error(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": "another-pw-9"}),
                     "INVALID_OOB_CODE")
    ok(srv.sign_in(email, NEW_PASSWORD))
    # but other actions and other addresses are untouched.
    assert ok(srv.post("accounts:update", {"oobCode": verify}))["emailVerified"] is True
    ok(srv.post("accounts:resetPassword", {"oobCode": neighbour, "newPassword": NEW_PASSWORD}))


def test_a_used_code_is_invalid(server):
    srv = server()
    email = unique_email("used")
    srv.sign_up(email, PASSWORD)
    code = srv.oob("VERIFY_EMAIL", email)["oobCode"]
    ok(srv.post("accounts:update", {"oobCode": code}))
    assert_error(srv.post("accounts:update", {"oobCode": code}), "INVALID_OOB_CODE")


# --------------------------------------------------------------------------- signInWithEmailLink
def test_email_link_sign_in_creates_a_verified_account(server):
    srv = server()
    email = unique_email("newuser")
    code = sign_in_code(srv, email)
    body = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}))
    assert body["kind"] == KIND["signInWithEmailLink"]
    assert body["email"] == email and body["isNewUser"] is True and body["localId"]
    assert is_jwt(body["idToken"]) and body["refreshToken"] and body["expiresIn"] == "3600"
    [user] = ok(srv.lookup(body["idToken"]))["users"]
    assert user["emailVerified"] is True
    assert user.get("emailLinkSignin") is True
    assert_error(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}), "INVALID_OOB_CODE")

    again = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": sign_in_code(srv, email)}))
    assert again["isNewUser"] is False and again["localId"] == body["localId"]


def test_email_link_sign_in_with_the_wrong_email_is_refused_without_burning_the_code(server):
    srv = server()
    email = unique_email("right")
    code = sign_in_code(srv, email)
    resp = srv.post("accounts:signInWithEmailLink", {"email": unique_email("wrong"), "oobCode": code})
    assert_error(resp, "INVALID_EMAIL", message=MISMATCH)
    ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}))


def test_email_link_sign_in_to_an_unverified_password_account_removes_the_password(server):
    srv = server()
    email = unique_email("squatted")
    squatter = srv.sign_up(email, PASSWORD)  # someone registered this address without owning it
    next_second()
    body = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": sign_in_code(srv, email)}))
    assert body["isNewUser"] is False and body["localId"] == squatter["localId"]
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")
    assert_error(srv.lookup(squatter["idToken"]), "TOKEN_EXPIRED")
    [user] = ok(srv.lookup(body["idToken"]))["users"]
    assert user["emailVerified"] is True


def test_email_link_sign_in_to_a_verified_password_account_keeps_the_password(server):
    srv = server()
    email = unique_email("owner")
    ok(srv.admin("accounts", {"email": email, "password": PASSWORD, "emailVerified": True}))
    earlier = ok(srv.sign_in(email, PASSWORD))["idToken"]
    ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": sign_in_code(srv, email)}))
    ok(srv.sign_in(email, PASSWORD))
    ok(srv.lookup(earlier))


def test_email_link_with_id_token_for_an_address_owned_by_another_account_is_email_exists(server):
    srv = server()
    mine, theirs = unique_email("mine"), unique_email("theirs")
    me = srv.sign_up(mine, PASSWORD)
    srv.sign_up(theirs, PASSWORD)
    resp = srv.post("accounts:signInWithEmailLink",
                    {"email": theirs, "oobCode": sign_in_code(srv, theirs), "idToken": me["idToken"]})
    assert_error(resp, "EMAIL_EXISTS")


# --------------------------------------------------------------------------- accounts:update with a code
def test_change_email_to_an_address_taken_since_is_email_exists(server):
    srv = server()
    old, new = unique_email("old"), unique_email("new")
    account = srv.sign_up(old, PASSWORD)
    ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=account["idToken"], newEmail=new))
    [item] = srv.mail_to(new)
    srv.sign_up(new, "someone-else-pw")
    assert_error(srv.post("accounts:update", {"oobCode": code_of(action_link(item["message"]))}), "EMAIL_EXISTS")
    ok(srv.sign_in(old, PASSWORD))


# --------------------------------------------------------------------------- events
def test_redemptions_and_rejections_are_recorded_with_ip_and_user_agent(server):
    srv = server()
    email = unique_email("events")
    srv.sign_up(email, PASSWORD)
    code = srv.oob("VERIFY_EMAIL", email)["oobCode"]
    agent = "HeraldTest-API-Client/1.0 (events)"
    ok(srv.post("accounts:update", {"oobCode": code}, headers={"User-Agent": agent}))
    assert_error(srv.post("accounts:update", {"oobCode": code}, headers={"User-Agent": agent + " again"}),
                 "INVALID_OOB_CODE")

    redeemed = [e for e in srv.events("redeemed") if e["user_agent"] == agent]
    assert len(redeemed) == 1, srv.events()
    rejected = [e for e in srv.events("rejected") if e["user_agent"] == agent + " again"]
    assert len(rejected) == 1, srv.events()
    for event in redeemed + rejected:
        assert "127.0.0.1" in (event["ip"] or ""), event
        assert event["at"], event
    assert redeemed[0]["code_id"] is not None
    assert rejected[0]["code_id"] == redeemed[0]["code_id"]


# --------------------------------------------------------------------------- emulator mode
def test_emulator_oob_codes_listing_only_in_emulator_mode(server):
    srv = server()
    resp = requests.get(f"{srv.url}/emulator/v1/projects/herald-demo/oobCodes", timeout=HTTP_TIMEOUT)
    assert resp.status_code == 404, resp.text

    # Like Firebase's emulator, emulator mode mints the code at once and sends no mail; the
    # plaintext is listed from memory.
    emu = server(server={"emulatorMode": True})
    email = unique_email("emu")
    emu.sign_up(email, PASSWORD)
    ok(emu.send_oob("PASSWORD_RESET", email, continueUrl=CONTINUE))
    resp = requests.get(f"{emu.url}/emulator/v1/projects/herald-demo/oobCodes", timeout=HTTP_TIMEOUT)
    body = ok(resp)
    [entry] = [c for c in body["oobCodes"] if c["email"] == email]
    assert entry["requestType"] == "PASSWORD_RESET"
    assert entry["oobCode"] and entry["oobCode"] in entry["oobLink"]
    assert code_of(entry["oobLink"]) == entry["oobCode"]
    with sqlite3.connect(emu.db_path) as db:
        assert db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0, "emulator mode queues no mail"
    ok(emu.post("accounts:resetPassword", {"oobCode": entry["oobCode"], "newPassword": NEW_PASSWORD}))
    ok(emu.sign_in(email, NEW_PASSWORD))
    assert error_code(emu.sign_in(email, PASSWORD)) == "INVALID_LOGIN_CREDENTIALS"

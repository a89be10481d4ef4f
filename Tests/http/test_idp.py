"""Identity providers (issue #11): `accounts:signInWithIdp` / v3 `verifyAssertion` against real protocol
peers on loopback — an OIDC issuer signing ID tokens with its own key and serving its JWKS, and a Twitter
`verify_credentials` endpoint that checks each request's OAuth 1.0a signature with oauthlib.

The hosted sign-in handler's browser flows are in test_idp_handler.py."""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import jwt
import requests

from helpers import API_KEY, herald_env, query
from http_support import assert_error, error_code, ok, unique_email
from idp_peers import new_rsa_key

PASSWORD = "idp-password-1"


def idp(srv, provider_id: str, *, id_token: str | None = None, access_token: str | None = None,
        secret: str | None = None, id_token_of: str | None = None) -> requests.Response:
    parts = [f"providerId={quote(provider_id)}"]
    if id_token is not None:
        parts.append(f"id_token={quote(id_token)}")
    if access_token is not None:
        parts.append(f"access_token={quote(access_token)}")
    if secret is not None:
        parts.append(f"oauth_token_secret={quote(secret)}")
    body = {"postBody": "&".join(parts), "requestUri": "http://localhost", "returnSecureToken": True,
            "returnIdpCredential": True}
    if id_token_of is not None:
        body["idToken"] = id_token_of
    return srv.post("accounts:signInWithIdp", body)


def oidc_server(server, issuer, trusted: bool = False):
    return server(providers={"oidc": {"acme": {**issuer.herald_provider(), "trusted": trusted}}})


def test_a_new_provider_user_gets_a_new_account(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("idp-new")
    body = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-1", email=email, name="Ada")))
    assert body["kind"] == "identitytoolkit#VerifyAssertionResponse"
    assert body["isNewUser"] is True and body["providerId"] == "oidc.acme" and body["federatedId"] == "sub-1"
    # An untrusted provider proves no address: the account's is unproven until its owner proves it.
    assert body["email"] == email and body["emailVerified"] is False and body["displayName"] == "Ada"
    assert "needConfirmation" not in body and body["oauthIdToken"]
    claims = jwt.decode(body["idToken"], options={"verify_signature": False})
    assert claims["sub"] == body["localId"] and claims["firebase"]["sign_in_provider"] == "oidc.acme"
    assert claims["firebase"]["identities"] == {"email": [email], "oidc.acme": ["sub-1"]}, claims
    # Again: the same account, not new.
    again = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-1", email=email)))
    assert again["localId"] == body["localId"] and "isNewUser" not in again


def test_forged_expired_foreign_and_misissued_tokens_are_refused(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("idp-bad")
    for token in (oidc_issuer.id_token("s", email=email, key=new_rsa_key()),
                  oidc_issuer.id_token("s", email=email, exp_in=-3600),
                  oidc_issuer.id_token("s", email=email, aud="someone-else"),
                  oidc_issuer.id_token("s", email=email, iss="https://evil.example.com"),
                  oidc_issuer.id_token("s", email=email, alg="none"),
                  oidc_issuer.id_token("s", email=email, alg="HS256")):
        assert_error(idp(srv, "oidc.acme", id_token=token), "INVALID_IDP_RESPONSE")
    assert_error(idp(srv, "oidc.other", id_token=oidc_issuer.id_token("s", email=email)), "OPERATION_NOT_ALLOWED")
    # The issuer's own, valid token is taken, and none of the refused ones made an account.
    assert ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("s", email=email)))["isNewUser"] is True


def test_an_existing_email_needs_confirmation_then_links_with_the_id_token(server, oidc_issuer):
    """The seed's flow: the provider's email belongs to an account with another sign-in method →
    needConfirmation (the SDK's account-exists-with-different-credential) with the email and no tokens;
    the user signs in the old way and links; then either method reaches the same localId."""
    srv = oidc_server(server, oidc_issuer, trusted=False)
    email = unique_email("idp-exists")
    existing = srv.sign_up(email, PASSWORD)
    token = oidc_issuer.id_token("sub-9", email=email)
    body = ok(idp(srv, "oidc.acme", id_token=token))
    assert body["needConfirmation"] is True and body["email"] == email
    assert "idToken" not in body and "refreshToken" not in body and body["oauthIdToken"] == token
    linked = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-9", email=email), id_token_of=existing["idToken"]))
    assert linked["localId"] == existing["localId"] and linked.get("idToken")
    via_provider = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-9", email=email)))
    via_password = ok(srv.sign_in(email, PASSWORD))
    assert via_provider["localId"] == via_password["localId"] == existing["localId"]
    # The ledger has each answer, with who asked.
    events = query(srv.db_path, "SELECT uid, kind, provider_id, ip FROM account_events ORDER BY id")
    assert [(e["kind"], e["provider_id"]) for e in events] == [
        ("idp-need-confirmation", "oidc.acme"), ("idp-link", "oidc.acme"), ("idp-sign-in", "oidc.acme")], events
    assert {e["uid"] for e in events} == {existing["localId"]} and all(e["ip"] == "127.0.0.1" for e in events)
    shown = subprocess.run([str(srv.binary), "audit", "--sign-ins", "--format", "jsonl", "--email", email, "--config", str(srv.config)],
                           cwd=srv.cwd, env=herald_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    lines = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(line["kind"], line["email"], line["rawId"]) for line in lines] == [
        ("idp-need-confirmation", email, "sub-9"), ("idp-link", email, "sub-9"), ("idp-sign-in", email, "sub-9")], lines
    # The identity is taken now: linking it to another account is refused — with `returnIdpCredential`, as Firebase
    # answers, beside the credential and with no tokens.
    other = srv.sign_up(unique_email("idp-other"), PASSWORD)
    refused = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-9", email=email), id_token_of=other["idToken"]))
    assert refused["errorMessage"] == "FEDERATED_USER_ID_ALREADY_LINKED" and refused["oauthIdToken"], refused
    assert "idToken" not in refused and "localId" not in refused, refused


def test_a_trusted_verified_email_takes_over_an_unverified_password_account(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer, trusted=True)
    email = unique_email("idp-takeover")
    squatter = srv.sign_up(email, PASSWORD)
    body = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-t", email=email)))
    assert body["localId"] == squatter["localId"] and body.get("idToken") and "needConfirmation" not in body
    # The password anyone could have set is gone, and its sessions ended.
    assert_error(srv.sign_in(email, PASSWORD), "INVALID_LOGIN_CREDENTIALS")


def test_google_sign_ins_answer_as_google_and_other_providers_with_their_claims(server, oidc_issuer):
    """Outside emulator mode too: Google's federatedId is its account URL and rawUserInfo has Google's userinfo
    shape (with the token's locale, none when it has none), its names also as firstName/lastName; another OIDC
    provider's rawUserInfo is the ID token's claims."""
    srv = server(providers={"google": oidc_issuer.herald_provider(), "oidc": {"acme": oidc_issuer.herald_provider()}})
    email = unique_email("idp-google")
    token = oidc_issuer.id_token("g-raw", email=email, name="Ada Lovelace",
                                 extra={"given_name": "Ada", "family_name": "Lovelace", "locale": "pl"})
    body = ok(idp(srv, "google.com", id_token=token))
    assert body["federatedId"] == "https://accounts.google.com/g-raw", body
    assert body["firstName"] == "Ada" and body["lastName"] == "Lovelace", body
    raw = json.loads(body["rawUserInfo"])
    assert raw["id"] == "g-raw" and raw["email"] == email and raw["verified_email"] is True and raw["locale"] == "pl", raw
    assert raw["given_name"] == "Ada" and "https://www.googleapis.com/auth/userinfo.email" in raw["granted_scopes"], raw
    other = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("a-raw", email=unique_email("idp-acme"))))
    assert other["federatedId"] == "a-raw" and "firstName" not in other, other
    assert json.loads(other["rawUserInfo"])["sub"] == "a-raw", other


def test_twitter_credentials_are_checked_with_verify_credentials(server, oauth1_provider):
    email = unique_email("idp-twitter")
    user = oauth1_provider.add_user(name="Ada Twitter", screen_name="ada_t", email=email)
    srv = server(providers={"twitter": oauth1_provider.herald_provider()})
    body = ok(idp(srv, "twitter.com", access_token=user.token, secret=user.secret))
    assert body["isNewUser"] is True and body["federatedId"] == user.id_str and body["screenName"] == "ada_t"
    assert body["email"] == email and body["oauthAccessToken"] == user.token and body["oauthTokenSecret"] == user.secret
    assert oauth1_provider.verified_requests, "Herald's request was not signed correctly"
    # A wrong secret makes a bad signature: Twitter refuses, and so does Herald.
    assert_error(idp(srv, "twitter.com", access_token=user.token, secret="not-the-secret"), "INVALID_IDP_RESPONSE")
    assert any(not r.verified for r in oauth1_provider.requests)


def test_emulator_mode_accepts_the_emulators_fake_assertions(server):
    srv = server(server={"emulatorMode": True})
    email = unique_email("idp-emu")
    fake = '{"sub":"fake-1","email":"%s","email_verified":true,"screen_name":"emu"}' % email
    body = ok(idp(srv, "twitter.com", id_token=fake))
    assert body["isNewUser"] is True and body["federatedId"] == "fake-1" and body["email"] == email
    assert_error(idp(srv, "google.com", id_token='{"email":"x@example.com"}'), "INVALID_IDP_RESPONSE")


def test_lookup_and_create_auth_uri_show_the_linked_provider(server, oidc_issuer):
    srv = server(server={"enumerationProtection": False},
                 providers={"oidc": {"acme": oidc_issuer.herald_provider()}})
    email = unique_email("idp-methods")
    existing = srv.sign_up(email, PASSWORD)
    before = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
    assert before["signinMethods"] == ["password"], before
    ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-m", email=email, name="Ada M"), id_token_of=existing["idToken"]))
    after = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
    assert after["signinMethods"] == ["password", "oidc.acme"], after
    [user] = ok(srv.lookup(srv.sign_in(email, PASSWORD).json()["idToken"]))["users"]
    acme = next(p for p in user["providerUserInfo"] if p["providerId"] == "oidc.acme")
    assert acme["rawId"] == acme["federatedId"] == "sub-m" and acme["displayName"] == "Ada M", user


def test_a_guest_is_upgraded_in_place_by_a_provider(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    guest = ok(srv.post("accounts:signUp", {"returnSecureToken": True}))
    assert jwt.decode(guest["idToken"], options={"verify_signature": False})["firebase"]["sign_in_provider"] == "anonymous"
    [user] = ok(srv.lookup(guest["idToken"]))["users"]
    assert "email" not in user and user.get("providerUserInfo", []) == [], user
    email = unique_email("idp-guest")
    linked = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-g", email=email), id_token_of=guest["idToken"]))
    assert linked["localId"] == guest["localId"]
    [user] = ok(srv.lookup(linked["idToken"]))["users"]
    assert user["email"] == email and [p["providerId"] for p in user["providerUserInfo"]] == ["oidc.acme"], user


def test_a_guest_is_upgraded_in_place_by_a_password(server):
    srv = server()
    guest = ok(srv.post("accounts:signUp", {"returnSecureToken": True}))
    email = unique_email("guest-password")
    upgraded = ok(srv.post("accounts:signUp", {"idToken": guest["idToken"], "email": email, "password": PASSWORD,
                                              "returnSecureToken": True}))
    assert upgraded["localId"] == guest["localId"]
    assert ok(srv.sign_in(email, PASSWORD))["localId"] == guest["localId"]
    # Half a credential is still refused, as before.
    assert_error(srv.post("accounts:signUp", {"email": unique_email("half")}), "MISSING_PASSWORD")
    assert_error(srv.post("accounts:signUp", {"password": PASSWORD}), "MISSING_EMAIL")


def test_unlinking_a_provider(server, oidc_issuer):
    srv = server(server={"enumerationProtection": False}, providers={"oidc": {"acme": oidc_issuer.herald_provider()}})
    email = unique_email("idp-unlink")
    existing = srv.sign_up(email, PASSWORD)
    linked = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-u", email=email), id_token_of=existing["idToken"]))
    ok(srv.post("accounts:update", {"idToken": linked["idToken"], "deleteProvider": ["oidc.acme", "never-linked.com"]}))
    methods = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
    assert methods["signinMethods"] == ["password"], methods
    kinds = query(srv.db_path, "SELECT kind, provider_id, detail FROM account_events WHERE uid = ? ORDER BY id",
                  (existing["localId"],))
    unlinks = [(e["kind"], e["provider_id"], e["detail"]) for e in kinds if e["kind"] == "idp-unlink"]
    assert unlinks == [("idp-unlink", "oidc.acme", "sub-u")], kinds
    # The identity is free again: signing in with it meets the account by email, which needs confirmation.
    again = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-u", email=email)))
    assert again["needConfirmation"] is True and again["localId"] == existing["localId"]


def test_email_link_sign_in_adds_email_link_to_a_provider_only_account(server, oidc_issuer):
    # A trusted provider proved the address, so the email link adds a way in and takes nothing away.
    srv = server(server={"enumerationProtection": False},
                 providers={"oidc": {"acme": {**oidc_issuer.herald_provider(), "trusted": True}}})
    email = unique_email("idp-emaillink")
    created = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-e", email=email)))
    code = srv.oob("EMAIL_SIGNIN", email, continueUrl="https://app.example.com/finish", canHandleCodeInApp=True)["oobCode"]
    signed = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}))
    assert signed["localId"] == created["localId"]
    methods = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
    assert methods["signinMethods"] == ["emailLink", "oidc.acme"], methods


def test_update_answers_list_linked_providers_as_they_know_the_user(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    created = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-up", email=unique_email("idp-up"), name="Up")))
    updated = ok(srv.post("accounts:update", {"idToken": created["idToken"], "displayName": "Renamed"}))
    [acme] = updated["providerUserInfo"]
    assert acme["providerId"] == "oidc.acme" and acme["rawId"] == "sub-up" and acme["displayName"] == "Up", updated


def test_forged_assertions_count_as_failed_sign_ins_of_the_client(server, oidc_issuer):
    srv = server(providers={"oidc": {"acme": oidc_issuer.herald_provider()}}, limits={"ipSignInFailuresPerHour": 3})
    email = unique_email("idp-forger")
    for _ in range(3):
        assert_error(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("s", email=email, key=new_rsa_key())),
                     "INVALID_IDP_RESPONSE")
    # Now even a good assertion from this client waits, as a password guesser does.
    assert_error(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("s", email=email)), "TOO_MANY_ATTEMPTS_TRY_LATER")


# --------------------------------------------------------------------------- proof of the address resets trust
def refresh(srv, refresh_token: str) -> requests.Response:
    return requests.post(srv.url + "/securetoken.googleapis.com/v1/token", params={"key": API_KEY},
                         data={"grant_type": "refresh_token", "refresh_token": refresh_token}, timeout=10)


def reset_password(srv, email: str, password: str) -> None:
    code = srv.oob("PASSWORD_RESET", email)["oobCode"]
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": password}))


def test_a_reset_unlinks_a_provider_an_attacker_linked_before_the_address_was_proven(server, oidc_issuer):
    """Pre-hijack: the attacker signs up with the victim's address and a password, links their own provider
    identity, and waits. The victim's reset proves the address: the attacker's identity no longer reaches the
    account (it signs in to an account of its own), and the attacker's session is over."""
    srv = oidc_server(server, oidc_issuer)
    victim = unique_email("prehijack-reset")
    squat = srv.sign_up(victim, PASSWORD)
    attacker_token = oidc_issuer.id_token("attacker-1", email=unique_email("attacker"))
    linked = ok(idp(srv, "oidc.acme", id_token=attacker_token, id_token_of=squat["idToken"]))
    assert linked["localId"] == squat["localId"]
    reset_password(srv, victim, "victims-own-password")
    again = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("attacker-1", email=unique_email("attacker"))))
    assert again["localId"] != squat["localId"], "the attacker's provider identity still signs in to the victim's account"
    assert refresh(srv, linked["refreshToken"]).status_code == 400, "the attacker's session outlived the reset"
    assert ok(srv.sign_in(victim, "victims-own-password"))["localId"] == squat["localId"]
    unlinks = query(srv.db_path, "SELECT kind, provider_id, detail FROM account_events WHERE uid = ? AND kind = 'idp-unlink'",
                    (squat["localId"],))
    assert [(e["provider_id"], e["detail"]) for e in unlinks] == [("oidc.acme", "attacker-1")], unlinks


def test_an_email_link_sign_in_ends_an_account_an_untrusted_provider_made_for_the_address(server, oidc_issuer):
    """The attacker's untrusted provider says the victim's address is its user's: the account it makes holds
    the address unproven. The victim's email-link sign-in proves it: the attacker's identity and refresh token
    stop working."""
    srv = server(server={"enumerationProtection": False}, providers={"oidc": {"acme": oidc_issuer.herald_provider()}})
    victim = unique_email("prehijack-link")
    made = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("attacker-2", email=victim)))
    assert made["emailVerified"] is False
    code = srv.oob("EMAIL_SIGNIN", victim, continueUrl="https://app.example.com/finish", canHandleCodeInApp=True)["oobCode"]
    signed = ok(srv.post("accounts:signInWithEmailLink", {"email": victim, "oobCode": code}))
    assert signed["localId"] == made["localId"]
    assert refresh(srv, made["refreshToken"]).status_code == 400, "the attacker's refresh token survived the proof"
    again = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("attacker-2", email=victim)))
    # The identity is no longer the account's: the address's account now needs its owner's confirmation.
    assert again.get("needConfirmation") is True and "idToken" not in again, again


def test_a_trusted_take_over_drops_every_other_provider(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer, trusted=True)
    victim = unique_email("prehijack-trusted")
    squat = srv.sign_up(victim, PASSWORD)
    # The attacker's own identity of the same provider, linked while the address was unproven.
    ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("attacker-3", email=unique_email("attacker")),
           id_token_of=squat["idToken"]))
    owner = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("victim-3", email=victim)))
    assert owner["localId"] == squat["localId"]
    again = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("attacker-3", email=unique_email("attacker"))))
    assert again["localId"] != squat["localId"]


def test_under_enumeration_protection_need_confirmation_reveals_nothing_and_unvouched_addresses_claim_nothing(
        server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)  # enumeration protection is the default
    email = unique_email("idp-hidden")
    existing = srv.sign_up(email, PASSWORD)
    body = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-h", email=email)))
    assert body["needConfirmation"] is True
    assert "localId" not in body and "verifiedProvider" not in body, body
    # A provider that does not call the address verified claims nothing: no account is found by it, none gets it.
    other = unique_email("idp-unvouched")
    made = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-u", email=other, email_verified=False)))
    assert "needConfirmation" not in made
    assert srv.sign_up(other, PASSWORD)["localId"] != made["localId"], "the unvouched address was taken"
    unvouched_existing = ok(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token("sub-v", email=email, email_verified=False)))
    assert "needConfirmation" not in unvouched_existing and unvouched_existing["localId"] != existing["localId"]


# --------------------------------------------------------------------------- the provider's keys
def test_a_hanging_key_endpoint_stalls_no_one_else_and_is_asked_once(server, oidc_issuer):
    """40 sign-ins from one client against a provider whose JWKS endpoint hangs: one fetch in flight, on a thread
    of its own, so another client's sign-up is answered at once."""
    srv = oidc_server(server, oidc_issuer)
    oidc_issuer.jwks_delay = 8
    tokens = [oidc_issuer.id_token(f"sub-hang-{i}", email=unique_email("hang")) for i in range(40)]
    with ThreadPoolExecutor(max_workers=40) as pool:
        pending = [pool.submit(idp, srv, "oidc.acme", id_token=token) for token in tokens]
        time.sleep(1)  # the sign-ins are waiting for the keys
        started = time.monotonic()
        other = srv.post("accounts:signUp", {"email": unique_email("bystander"), "password": PASSWORD, "returnSecureToken": True})
        took = time.monotonic() - started
        # Before, it waited for the fetches holding the shared blocking threads (10-20 s); the margin is the load of
        # a whole test run on two cores.
        assert other.status_code == 200 and took < 5, f"another client's sign-up took {took:.1f} s while the keys hung"
        answers = [future.result(timeout=60) for future in pending]
    assert oidc_issuer.jwks_requests == 1, f"{oidc_issuer.jwks_requests} fetches of one provider's keys"
    assert all(resp.status_code in (400, 503) for resp in answers), {resp.status_code for resp in answers}


def test_a_failing_key_endpoint_is_asked_once_per_backoff_and_counts_against_the_client(server, oidc_issuer):
    srv = server(providers={"oidc": {"acme": oidc_issuer.herald_provider()}}, limits={"ipSignInFailuresPerHour": 5})
    oidc_issuer.jwks_status = 500
    codes = [error_code(idp(srv, "oidc.acme", id_token=oidc_issuer.id_token(f"s{i}", email=unique_email("fail"))))
             for i in range(12)]
    assert oidc_issuer.jwks_requests <= 2, f"{oidc_issuer.jwks_requests} fetches for 12 sign-ins"
    assert codes[-1] == "TOO_MANY_ATTEMPTS_TRY_LATER", codes

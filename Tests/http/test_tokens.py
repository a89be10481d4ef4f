"""Sessions the Firebase way: RS256 ID tokens checked against Herald's public keys
(`/.well-known/jwks.json` with real PyJWT, Google's x509 form with `cryptography`),
refresh tokens redeemed at the securetoken endpoint (and stored only hashed),
the signing-key file, and `herald keys rotate` / `herald keys list` across a restart."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import stat
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import jwt  # PyJWT[crypto]: see Tests/requirements.txt
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from helpers import API_KEY, REPO_ROOT, action_link, database_files, herald_env
from http_support import (
    CONTINUE, HTTP_TIMEOUT, PROJECT, HeraldServer, assert_error, code_of, is_jwt, ok, unique_email,
)

PASSWORD = "token-password-1"
NEW_PASSWORD = "token-password-2"
ISSUER = f"https://securetoken.google.com/{PROJECT}"
SECURETOKEN = "/securetoken.googleapis.com/v1/token"
TOKEN_PATHS = [SECURETOKEN, "/v1/token"]
JWKS_PATH = "/.well-known/jwks.json"
X509_PATH = "/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
KEY_FILE = "signing-keys.json"  # default: next to the database
CLI_TIMEOUT = 60
REFRESH_FIELDS = {"access_token", "expires_in", "token_type", "refresh_token", "id_token", "user_id", "project_id"}


# --------------------------------------------------------------------------- securetoken
def refresh(srv, refresh_token: Optional[str], *, path: str = SECURETOKEN, as_json: bool = False,
            grant_type: Optional[str] = "refresh_token") -> requests.Response:
    """POST {path}?key=KEY with grant_type / refresh_token, form-encoded unless `as_json`
    (a None value leaves the field out)."""
    fields = {k: v for k, v in (("grant_type", grant_type), ("refresh_token", refresh_token)) if v is not None}
    kwargs = {"json": fields} if as_json else {"data": fields}
    return requests.post(srv.url + path, params={"key": API_KEY}, timeout=HTTP_TIMEOUT, allow_redirects=False,
                         **kwargs)


def show(resp: requests.Response) -> str:
    return f"{resp.request.method} {resp.url} -> {resp.status_code}\n{resp.text[:2000]}"


def refreshed(resp: requests.Response, uid: str) -> dict:
    """A 200 securetoken answer for `uid`, checked field by field."""
    assert resp.status_code == 200, f"expected 200\n{show(resp)}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), show(resp)
    body = resp.json()
    assert REFRESH_FIELDS <= set(body), f"missing {sorted(REFRESH_FIELDS - set(body))}\n{show(resp)}"
    assert body["expires_in"] == "3600" and body["token_type"] == "Bearer", show(resp)
    assert body["user_id"] == uid and body["project_id"] == PROJECT, show(resp)
    assert is_jwt(body["id_token"]) and body["access_token"] == body["id_token"], show(resp)
    assert isinstance(body["refresh_token"], str) and len(body["refresh_token"]) >= 20, show(resp)
    return body


def assert_token_error(resp: requests.Response, code: str) -> None:
    """securetoken's 400 envelope: {"error": {"code": 400, "message": CODE, ...}}."""
    assert resp.status_code == 400, f"expected 400 {code}\n{show(resp)}"
    assert resp.headers.get("Content-Type", "").startswith("application/json"), show(resp)
    try:
        error = resp.json()["error"]
    except (ValueError, KeyError, TypeError):
        pytest.fail(f"no Firebase error envelope\n{show(resp)}")
    assert error.get("code") == 400, show(resp)
    message = error.get("message")
    assert message == code or (isinstance(message, str) and message.startswith(code + " : ")), \
        f"expected {code}\n{show(resp)}"


# --------------------------------------------------------------------------- public keys
def jwks(srv) -> dict:
    resp = requests.get(srv.url + JWKS_PATH, timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200, show(resp)
    assert resp.headers.get("Content-Type", "").startswith("application/json"), show(resp)
    body = resp.json()
    keys = body.get("keys")
    assert isinstance(keys, list) and keys, show(resp)
    for key in keys:
        assert {k: key.get(k) for k in ("kty", "alg", "use")} == {"kty": "RSA", "alg": "RS256", "use": "sig"}, key
        assert all(isinstance(key.get(k), str) and key[k] for k in ("kid", "n", "e")), key
        private = {"d", "p", "q", "dp", "dq", "qi"} & set(key)
        assert not private, f"the JWKS publishes private key members {sorted(private)}"
    kids = [k["kid"] for k in keys]
    assert len(set(kids)) == len(kids), f"duplicate kids {kids}"
    return {k["kid"]: k for k in keys}


def x509_certs(srv) -> dict:
    resp = requests.get(srv.url + X509_PATH, timeout=HTTP_TIMEOUT)
    assert resp.status_code == 200, show(resp)
    assert resp.headers.get("Content-Type", "").startswith("application/json"), show(resp)
    body = resp.json()
    assert isinstance(body, dict) and body, show(resp)
    certs = {}
    for kid, pem in body.items():
        assert isinstance(pem, str) and pem.startswith("-----BEGIN CERTIFICATE-----\n"), (kid, pem[:80])
        certs[kid] = x509.load_pem_x509_certificate(pem.encode("ascii"))
    return certs


def verify_with_jwks(srv, token: str) -> dict:
    """The token's claims, verified the way a backend does with PyJWT and Herald's JWKS."""
    jwks(srv)  # a plain failure first when the endpoint is missing or malformed
    client = jwt.PyJWKClient(srv.url + JWKS_PATH, timeout=HTTP_TIMEOUT)
    signing_key = client.get_signing_key_from_jwt(token)
    return jwt.decode(token, signing_key.key, algorithms=["RS256"], audience=PROJECT, issuer=ISSUER)


def kid_of(token: str) -> str:
    header = jwt.get_unverified_header(token)
    assert header.get("alg") == "RS256", header
    assert isinstance(header.get("kid"), str) and header["kid"], header
    return header["kid"]


def check_claims(claims: dict, uid: str, email: str, verified: bool) -> None:
    assert claims["iss"] == ISSUER and claims["aud"] == PROJECT, claims
    assert claims["sub"] == uid and claims["user_id"] == uid, claims
    for name in ("auth_time", "iat", "exp"):
        assert isinstance(claims[name], int), (name, claims)
    assert claims["exp"] == claims["iat"] + 3600, claims
    assert claims["auth_time"] <= claims["iat"], claims
    assert abs(claims["iat"] - time.time()) < 30, claims
    assert claims["email"] == email and claims["email_verified"] is verified, claims
    assert claims["firebase"]["sign_in_provider"] == "password", claims
    assert claims["firebase"]["identities"]["email"] == [email], claims


def validity(cert: x509.Certificate) -> tuple:
    """(not before, not after) as aware UTC datetimes, on any cryptography version."""
    if hasattr(cert, "not_valid_before_utc"):
        return cert.not_valid_before_utc, cert.not_valid_after_utc
    return (cert.not_valid_before.replace(tzinfo=timezone.utc), cert.not_valid_after.replace(tzinfo=timezone.utc))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def int_b64(value: str) -> int:
    return int.from_bytes(b64url_decode(value), "big")


# --------------------------------------------------------------------------- the CLI and restarts
def keys_cli(herald_bin: Path, srv, *args: str) -> subprocess.CompletedProcess:
    """`herald keys ARGS --config C` in the server's directory; must exit 0."""
    argv = [str(herald_bin), "keys", *args, "--config", str(srv.config)]
    result = subprocess.run(argv, cwd=srv.cwd, env=herald_env(), stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=CLI_TIMEOUT)
    assert result.returncode == 0, (f"$ {' '.join(argv)} exited {result.returncode}\n"
                                    f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


@pytest.fixture
def restart():
    """restart(srv) -> the same config and directory served again (SIGTERM, exit 0, start, READY)."""
    again: list = []

    def do(srv: HeraldServer) -> HeraldServer:
        srv.stop_cleanly()
        fresh = HeraldServer(srv.binary, srv.config, srv.cwd, srv.capture, (), srv.settings)
        again.append(fresh)
        return fresh.wait_ready()

    yield do
    for srv in again:
        if srv.returncode is None:
            assert srv.stop() == 0, f"restarted herald serve did not exit 0 on SIGTERM\n{srv.describe()}"


# --------------------------------------------------------------------------- refresh
@pytest.mark.parametrize("path", TOKEN_PATHS)
@pytest.mark.parametrize("as_json", [False, True], ids=["form", "json"])
def test_refresh_round_trip(server, path, as_json):
    srv = server()
    email = unique_email("refresh")
    account = srv.sign_up(email, PASSWORD)
    uid, first = account["localId"], account["refreshToken"]

    body = refreshed(refresh(srv, first, path=path, as_json=as_json), uid)
    check_claims(verify_with_jwks(srv, body["id_token"]), uid, email, False)
    [user] = ok(srv.lookup(body["id_token"]))["users"]
    assert user["localId"] == uid and user["email"] == email

    # The refresh token keeps working: the one handed back, and the first one again.
    again = refreshed(refresh(srv, body["refresh_token"], path=path, as_json=as_json), uid)
    ok(srv.lookup(again["id_token"]))
    refreshed(refresh(srv, first, path=path, as_json=as_json), uid)


def test_refreshed_tokens_carry_the_accounts_current_state(server):
    srv = server()
    email = unique_email("current")
    account = srv.sign_up(email, PASSWORD)
    uid = account["localId"]
    assert verify_with_jwks(srv, account["idToken"])["email_verified"] is False
    ok(srv.admin("accounts:update", {"localId": uid, "emailVerified": True}))
    body = refreshed(refresh(srv, account["refreshToken"]), uid)
    check_claims(verify_with_jwks(srv, body["id_token"]), uid, email, True)


def test_refresh_errors(server):
    srv = server()
    account = srv.sign_up(unique_email("errors"), PASSWORD)
    good = account["refreshToken"]

    for as_json in (False, True):
        assert_token_error(refresh(srv, good, grant_type=None, as_json=as_json), "MISSING_GRANT_TYPE")
        assert_token_error(refresh(srv, good, grant_type="authorization_code", as_json=as_json), "INVALID_GRANT_TYPE")
        assert_token_error(refresh(srv, good, grant_type="password", as_json=as_json), "INVALID_GRANT_TYPE")
        assert_token_error(refresh(srv, None, as_json=as_json), "MISSING_REFRESH_TOKEN")
        assert_token_error(refresh(srv, "not-a-refresh-token", as_json=as_json), "INVALID_REFRESH_TOKEN")
    # Near misses of a real token, and other credentials in its place.
    middle = len(good) // 2
    flipped = good[:middle] + ("A" if good[middle] != "A" else "B") + good[middle + 1:]
    near_misses = [flipped, good[:-1], good + "x", account["idToken"]]
    if good.swapcase() != good:
        near_misses.append(good.swapcase())
    for bad in near_misses:
        assert_token_error(refresh(srv, bad), "INVALID_REFRESH_TOKEN")
    refreshed(refresh(srv, good), account["localId"])  # none of that hurt the real one


def test_changes_that_end_sessions_make_refresh_token_expired(server):
    """validSince passes on a password reset or change, an email change and an admin revoke;
    refresh tokens issued before then die (no sleep: a change within the same second counts)."""
    srv = server()

    def account(tag: str) -> tuple:
        email = unique_email(tag)
        body = srv.sign_up(email, PASSWORD)
        refreshed(refresh(srv, body["refreshToken"]), body["localId"])  # works before the change
        return email, body

    bystander_email, bystander = account("bystander")

    reset_email, reset = account("reset")
    code = srv.oob("PASSWORD_RESET", reset_email)["oobCode"]
    ok(srv.post("accounts:resetPassword", {"oobCode": code, "newPassword": NEW_PASSWORD}))
    assert_token_error(refresh(srv, reset["refreshToken"]), "TOKEN_EXPIRED")
    after = ok(srv.sign_in(reset_email, NEW_PASSWORD))
    refreshed(refresh(srv, after["refreshToken"]), reset["localId"])

    changed_email, changed = account("changed")
    ok(srv.admin("accounts:update", {"localId": changed["localId"], "password": NEW_PASSWORD}))
    assert_token_error(refresh(srv, changed["refreshToken"]), "TOKEN_EXPIRED")
    after = ok(srv.sign_in(changed_email, NEW_PASSWORD))
    refreshed(refresh(srv, after["refreshToken"]), changed["localId"])

    moved_email, moved = account("moved")
    new_address = unique_email("moved-to")
    ok(srv.send_oob("VERIFY_AND_CHANGE_EMAIL", idToken=moved["idToken"], newEmail=new_address))
    [mail] = srv.mail_to(new_address)
    ok(srv.post("accounts:update", {"oobCode": code_of(action_link(mail["message"]))}))
    assert_token_error(refresh(srv, moved["refreshToken"]), "TOKEN_EXPIRED")
    after = ok(srv.sign_in(new_address, PASSWORD))
    body = refreshed(refresh(srv, after["refreshToken"]), moved["localId"])
    assert verify_with_jwks(srv, body["id_token"])["email"] == new_address

    revoked_email, revoked = account("revoked")
    ok(srv.admin("accounts:update", {"localId": revoked["localId"], "validSince": int(time.time())}))
    assert_token_error(refresh(srv, revoked["refreshToken"]), "TOKEN_EXPIRED")
    after = ok(srv.sign_in(revoked_email, PASSWORD))
    refreshed(refresh(srv, after["refreshToken"]), revoked["localId"])

    refreshed(refresh(srv, bystander["refreshToken"]), bystander["localId"])


def test_disabled_and_deleted_accounts_cannot_refresh(server):
    srv = server()
    disabled = srv.sign_up(unique_email("disabled"), PASSWORD)
    deleted = srv.sign_up(unique_email("deleted"), PASSWORD)
    for body in (disabled, deleted):
        refreshed(refresh(srv, body["refreshToken"]), body["localId"])

    ok(srv.admin("accounts:update", {"localId": disabled["localId"], "disableUser": True}))
    assert_token_error(refresh(srv, disabled["refreshToken"]), "USER_DISABLED")
    assert_token_error(refresh(srv, disabled["refreshToken"], as_json=True), "USER_DISABLED")

    ok(srv.admin("accounts:delete", {"localId": deleted["localId"]}))
    assert_token_error(refresh(srv, deleted["refreshToken"]), "USER_NOT_FOUND")
    assert_token_error(refresh(srv, deleted["refreshToken"], path="/v1/token", as_json=True), "USER_NOT_FOUND")


def test_refresh_tokens_are_stored_only_hashed(server):
    srv = server()
    email = unique_email("at-rest")
    account = srv.sign_up(email, PASSWORD)
    uid = account["localId"]
    # Verified first, so the email-link sign-in below keeps the password and its sessions.
    ok(srv.admin("accounts:update", {"localId": uid, "emailVerified": True}))
    tokens = [account["refreshToken"], ok(srv.sign_in(email, PASSWORD))["refreshToken"]]
    code = srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True)["oobCode"]
    tokens.append(ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}))["refreshToken"])
    tokens += [refreshed(refresh(srv, t), uid)["refresh_token"] for t in list(tokens)]
    tokens = sorted(set(tokens))
    assert len(tokens) >= 3, "each sign-in hands out its own refresh token"

    def check(stage: str) -> None:
        files = database_files(srv.db_path)
        assert files, f"no database at {srv.db_path}"
        blob = b"".join(p.read_bytes() for p in files)
        for token in tokens:
            assert token.encode("utf-8") not in blob, \
                f"plaintext refresh token in {[p.name for p in files]} ({stage})"
            try:
                raw = b64url_decode(token)
            except ValueError:
                raw = b""
            if len(raw) >= 16:
                assert raw not in blob, f"a refresh token's raw bytes are stored ({stage})"
            digest = hashlib.sha256(token.encode("utf-8")).digest()
            forms = (digest, digest.hex().encode(), base64.b64encode(digest), b64url(digest).encode())
            assert any(form in blob for form in forms), \
                f"no SHA-256 of refresh token {token[:8]}… in the ledger ({stage})"

    check("while serving")
    srv.stop_cleanly()
    check("after shutdown")


# --------------------------------------------------------------------------- ID tokens and public keys
def test_id_tokens_verify_with_the_jwks_and_carry_firebase_claims(server):
    srv = server()
    keys = jwks(srv)
    email = unique_email("claims")
    account = srv.sign_up(email, PASSWORD)
    uid = account["localId"]
    assert kid_of(account["idToken"]) in keys
    check_claims(verify_with_jwks(srv, account["idToken"]), uid, email, False)

    signed_in = ok(srv.sign_in(email, PASSWORD))
    check_claims(verify_with_jwks(srv, signed_in["idToken"]), uid, email, False)

    code = srv.oob("EMAIL_SIGNIN", email, continueUrl=CONTINUE, canHandleCodeInApp=True)["oobCode"]
    by_link = ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code}))
    assert by_link["localId"] == uid
    check_claims(verify_with_jwks(srv, by_link["idToken"]), uid, email, True)

    # Another project's verifier must refuse it.
    signing_key = jwt.PyJWKClient(srv.url + JWKS_PATH, timeout=HTTP_TIMEOUT).get_signing_key_from_jwt(by_link["idToken"])
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(by_link["idToken"], signing_key.key, algorithms=["RS256"], audience="another-project", issuer=ISSUER)


def test_tampered_and_forged_tokens_fail_everywhere(server):
    srv = server()
    victim = srv.sign_up(unique_email("victim"), PASSWORD)
    attacker = srv.sign_up(unique_email("attacker"), PASSWORD)
    token = attacker["idToken"]
    kid = kid_of(token)
    header_b64, payload_b64, signature_b64 = token.split(".")
    claims = json.loads(b64url_decode(payload_b64))
    assert claims["sub"] == attacker["localId"]
    stolen = dict(claims, sub=victim["localId"], user_id=victim["localId"])
    stolen_b64 = b64url(json.dumps(stolen, separators=(",", ":")).encode())
    signing_key = jwt.PyJWKClient(srv.url + JWKS_PATH, timeout=HTTP_TIMEOUT).get_signing_key_from_jwt(token)

    # The payload swapped under the genuine signature.
    swapped = f"{header_b64}.{stolen_b64}.{signature_b64}"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(swapped, signing_key.key, algorithms=["RS256"], audience=PROJECT, issuer=ISSUER)
    assert_error(srv.lookup(swapped), "INVALID_ID_TOKEN")

    # One signature byte changed.
    raw_signature = bytearray(b64url_decode(signature_b64))
    raw_signature[len(raw_signature) // 2] ^= 0x01
    flipped = f"{header_b64}.{payload_b64}.{b64url(bytes(raw_signature))}"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(flipped, signing_key.key, algorithms=["RS256"], audience=PROJECT, issuer=ISSUER)
    assert_error(srv.lookup(flipped), "INVALID_ID_TOKEN")

    # Signed by a key Herald never had, under Herald's kid.
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    foreign = jwt.encode(stolen, stranger, algorithm="RS256", headers={"kid": kid})
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(foreign, signing_key.key, algorithms=["RS256"], audience=PROJECT, issuer=ISSUER)
    assert_error(srv.lookup(foreign), "INVALID_ID_TOKEN")

    # alg confusion: HS256 keyed with the public key's PEM, and alg none.
    pem = signing_key.key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    hs_header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    mac = hmac.new(pem, f"{hs_header}.{stolen_b64}".encode(), hashlib.sha256).digest()
    assert_error(srv.lookup(f"{hs_header}.{stolen_b64}.{b64url(mac)}"), "INVALID_ID_TOKEN")
    none_header = b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
    assert_error(srv.lookup(f"{none_header}.{stolen_b64}."), "INVALID_ID_TOKEN")

    # The genuine tokens still work.
    assert ok(srv.lookup(token))["users"][0]["localId"] == attacker["localId"]
    assert ok(srv.lookup(victim["idToken"]))["users"][0]["localId"] == victim["localId"]


def test_x509_certificates_hold_the_jwks_keys_and_verify_tokens(server):
    srv = server()
    keys = jwks(srv)
    certs = x509_certs(srv)
    assert set(certs) == set(keys), f"x509 kids {sorted(certs)} != JWKS kids {sorted(keys)}"
    now = datetime.now(timezone.utc)
    for kid, cert in certs.items():
        public = cert.public_key()
        assert isinstance(public, rsa.RSAPublicKey), (kid, type(public))
        numbers = public.public_numbers()
        assert numbers.n == int_b64(keys[kid]["n"]) and numbers.e == int_b64(keys[kid]["e"]), kid
        start, end = validity(cert)
        assert start <= now <= end, (kid, start, end)

    email = unique_email("x509")
    account = srv.sign_up(email, PASSWORD)
    token = account["idToken"]
    cert = certs[kid_of(token)]
    signing_input, _, signature = token.rpartition(".")
    cert.public_key().verify(b64url_decode(signature), signing_input.encode("ascii"), padding.PKCS1v15(),
                             hashes.SHA256())
    claims = jwt.decode(token, cert.public_key(), algorithms=["RS256"], audience=PROJECT, issuer=ISSUER)
    check_claims(claims, account["localId"], email, False)


# --------------------------------------------------------------------------- the key file
def test_signing_keys_are_generated_per_installation_into_a_private_file(server):
    srv = server()
    path = srv.db_path.parent / KEY_FILE
    assert path.is_file(), f"no {KEY_FILE} next to the database ({sorted(p.name for p in path.parent.iterdir())})"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, f"{path} has mode {oct(stat.S_IMODE(path.stat().st_mode))}"
    text = path.read_text(encoding="utf-8")
    json.loads(text)
    [kid] = jwks(srv)
    assert kid in text, f"the JWKS kid {kid} is not in {path}"
    assert REPO_ROOT not in path.resolve().parents
    tracked = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True, timeout=30)
    assert tracked.returncode == 0, tracked.stderr
    assert not [f for f in tracked.stdout.splitlines() if "signing-keys" in f], "a signing-key file is committed"

    # Another installation, its key file named by tokens.keyFile: a key of its own.
    custom_dir = srv.cwd / "elsewhere" / "keys"
    custom_dir.mkdir(parents=True)
    custom = custom_dir / "herald-keys.json"
    other = server(tokens={"keyFile": str(custom)})
    assert custom.is_file(), f"tokens.keyFile {custom} was not created"
    assert stat.S_IMODE(custom.stat().st_mode) == 0o600, oct(stat.S_IMODE(custom.stat().st_mode))
    assert not (other.db_path.parent / KEY_FILE).exists(), "tokens.keyFile was ignored"
    [other_kid] = jwks(other)
    assert other_kid in custom.read_text(encoding="utf-8")
    assert jwks(other)[other_kid]["n"] != jwks(srv)[kid]["n"], "two installations share a signing key"

    # A token from one installation means nothing to the other.
    token = srv.sign_up(unique_email("mine"), PASSWORD)["idToken"]
    assert_error(other.lookup(token), "INVALID_ID_TOKEN")
    with pytest.raises(jwt.PyJWTError):
        verify_with_jwks(other, token)


def test_rotation_signs_with_the_new_key_and_old_tokens_keep_verifying(server, herald_bin, restart):
    srv = server()
    [old_kid] = jwks(srv)
    email = unique_email("rotate")
    before = srv.sign_up(email, PASSWORD)
    uid, old_token = before["localId"], before["idToken"]
    assert kid_of(old_token) == old_kid

    listed = keys_cli(herald_bin, srv, "list").stdout
    assert old_kid in listed, f"`herald keys list` does not show {old_kid}:\n{listed}"

    keys_cli(herald_bin, srv, "rotate")
    listed_after = keys_cli(herald_bin, srv, "list").stdout
    assert old_kid in listed_after, f"rotation dropped the old key:\n{listed_after}"
    # Still running on the old process: whatever it signs with, it publishes.
    interim = ok(srv.sign_in(email, PASSWORD))["idToken"]
    assert kid_of(interim) in jwks(srv)
    ok(srv.lookup(interim))

    srv = restart(srv)
    keys = jwks(srv)
    assert old_kid in keys, "the old key left the JWKS at rotation"
    new_kids = set(keys) - {old_kid}
    assert len(new_kids) == 1, f"expected one new key, JWKS has {sorted(keys)}"
    [new_kid] = new_kids
    assert new_kid in listed_after and new_kid not in listed, f"keys list vs JWKS:\n{listed_after}\n{sorted(keys)}"
    assert set(x509_certs(srv)) == set(keys)

    fresh = ok(srv.sign_in(email, PASSWORD))["idToken"]
    assert kid_of(fresh) == new_kid
    check_claims(verify_with_jwks(srv, fresh), uid, email, False)
    body = refreshed(refresh(srv, before["refreshToken"]), uid)
    assert kid_of(body["id_token"]) == new_kid

    # The token minted before rotation still verifies, publicly and at Herald.
    check_claims(verify_with_jwks(srv, old_token), uid, email, False)
    assert ok(srv.lookup(old_token))["users"][0]["localId"] == uid
    assert ok(srv.lookup(interim))["users"][0]["localId"] == uid
    path = srv.db_path.parent / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, oct(stat.S_IMODE(path.stat().st_mode))

"""Self-tests of the identity-provider peers (idp_peers.py) the #11 tests run Herald against.

No herald binary is needed: only the peers' own fixtures are requested, and PyJWT and
oauthlib (or a hand-written RFC 5849 signer) are the clients.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from urllib.parse import quote, urlsplit, parse_qsl

import jwt
import pytest
import requests

from idp_peers import CLIENT_ID, OAuth1Provider, OIDCIssuer, client_header, new_rsa_key

TIMEOUT = 10


# =========================================================================== OIDC issuer
def _verify(peer: OIDCIssuer, token: str, **kwargs) -> dict:
    """Verify like a relying party: PyJWKClient against jwks_url, RS256, aud and iss checked."""
    client = jwt.PyJWKClient(peer.jwks_url, cache_jwk_set=False, timeout=TIMEOUT)
    key = client.get_signing_key_from_jwt(token)
    options = kwargs.pop("options", {"require": ["exp", "iat", "iss", "aud", "sub"]})
    return jwt.decode(token, key.key, algorithms=["RS256"], audience=kwargs.pop("audience", CLIENT_ID),
                      issuer=kwargs.pop("issuer", peer.issuer), options=options, **kwargs)


def test_jwks_and_discovery_are_served(oidc_issuer: OIDCIssuer):
    jwks = requests.get(oidc_issuer.jwks_url, timeout=TIMEOUT)
    assert jwks.status_code == 200
    assert jwks.headers["Content-Type"].startswith("application/json")
    assert jwks.headers["Cache-Control"] == "public, max-age=3600"
    (key,) = jwks.json()["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig" and key["kid"] == oidc_issuer.kid
    assert len(base64.urlsafe_b64decode(key["n"] + "==")) == 256  # RSA-2048
    assert set(key) == {"kty", "kid", "use", "alg", "n", "e"}

    disco = requests.get(oidc_issuer.discovery_url, timeout=TIMEOUT).json()
    assert disco["issuer"] == oidc_issuer.issuer == f"http://127.0.0.1:{oidc_issuer.port}"
    assert disco["jwks_uri"] == oidc_issuer.jwks_url
    assert requests.get(f"{oidc_issuer.base_url}/nope", timeout=TIMEOUT).status_code == 404
    assert oidc_issuer.jwks_requests == 1
    assert oidc_issuer.requests == [("GET", "/jwks"), ("GET", "/.well-known/openid-configuration"), ("GET", "/nope")]


def test_token_verifies_through_the_jwks(oidc_issuer: OIDCIssuer):
    token = oidc_issuer.id_token("user-1", email="Ann@Example.com", nonce="n-0S6", name="Ann",
                                 picture="https://example.com/ann.png")
    assert jwt.get_unverified_header(token) == {"alg": "RS256", "typ": "JWT", "kid": oidc_issuer.kid}
    claims = _verify(oidc_issuer, token)
    assert claims["sub"] == "user-1" and claims["email"] == "Ann@Example.com" and claims["email_verified"] is True
    assert claims["nonce"] == "n-0S6" and claims["name"] == "Ann" and claims["picture"] == "https://example.com/ann.png"
    assert claims["iss"] == oidc_issuer.issuer and claims["aud"] == CLIENT_ID
    assert 590 <= claims["exp"] - time.time() <= 600
    assert oidc_issuer.jwks_requests == 1

    bare = _verify(oidc_issuer, oidc_issuer.id_token("user-2"))
    assert "email" not in bare and "email_verified" not in bare and "nonce" not in bare
    assert _verify(oidc_issuer, oidc_issuer.id_token("u", email="x@example.com", email_verified=False))[
        "email_verified"] is False
    extra = _verify(oidc_issuer, oidc_issuer.id_token("u", extra={"hd": "example.com", "auth_time": None}))
    assert extra["hd"] == "example.com" and "auth_time" not in extra
    assert oidc_issuer.jwks_requests == 4


def test_forged_tokens_fail(oidc_issuer: OIDCIssuer):
    foreign = oidc_issuer.id_token("user-1", email="ann@example.com", key=new_rsa_key())
    assert jwt.get_unverified_header(foreign)["kid"] == oidc_issuer.kid  # claims the issuer's key
    with pytest.raises(jwt.InvalidSignatureError):
        _verify(oidc_issuer, foreign)

    unsigned = oidc_issuer.id_token("user-1", alg="none")
    assert unsigned.endswith(".") and jwt.get_unverified_header(unsigned)["alg"] == "none"
    with pytest.raises(jwt.InvalidAlgorithmError):
        _verify(oidc_issuer, unsigned)

    confused = oidc_issuer.id_token("user-1", alg="HS256")
    assert jwt.get_unverified_header(confused)["alg"] == "HS256"
    with pytest.raises(jwt.InvalidAlgorithmError):
        _verify(oidc_issuer, confused)

    # A flipped claim under the issuer's real signature.
    head, body, sig = oidc_issuer.id_token("user-1").split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=="))
    claims["sub"] = "user-2"
    tampered = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(jwt.InvalidSignatureError):
        _verify(oidc_issuer, f"{head}.{tampered}.{sig}")

    with pytest.raises(jwt.PyJWKClientError):  # a kid the JWKS does not have
        _verify(oidc_issuer, oidc_issuer.id_token("user-1", kid="unknown-kid"))


def test_expired_wrong_audience_and_wrong_issuer_fail(oidc_issuer: OIDCIssuer):
    with pytest.raises(jwt.ExpiredSignatureError):
        _verify(oidc_issuer, oidc_issuer.id_token("user-1", exp_in=-60))
    with pytest.raises(jwt.InvalidAudienceError):
        _verify(oidc_issuer, oidc_issuer.id_token("user-1", aud="someone-else"))
    with pytest.raises(jwt.InvalidIssuerError):
        _verify(oidc_issuer, oidc_issuer.id_token("user-1", iss="https://accounts.example.com"))
    with pytest.raises(jwt.MissingRequiredClaimError):
        _verify(oidc_issuer, oidc_issuer.id_token("user-1", extra={"sub": None}))


def test_rotation_the_jwks_file_and_outages(oidc_issuer: OIDCIssuer, oidc_issuer_factory, tmp_path):
    old_kid, old_token = oidc_issuer.kid, oidc_issuer.id_token("user-1")
    new_kid = oidc_issuer.rotate()
    assert new_kid != old_kid and oidc_issuer.kid == new_kid and oidc_issuer.kids == [old_kid, new_kid]
    new_token = oidc_issuer.id_token("user-1")
    assert jwt.get_unverified_header(new_token)["kid"] == new_kid
    assert _verify(oidc_issuer, old_token)["sub"] == _verify(oidc_issuer, new_token)["sub"] == "user-1"

    path = oidc_issuer.jwks_file(tmp_path / "keys" / "jwks.json")
    key_set = jwt.PyJWKSet.from_json(path.read_text())
    assert {k.key_id for k in key_set.keys} == {old_kid, new_kid}
    assert jwt.decode(new_token, key_set[new_kid].key, algorithms=["RS256"], audience=CLIENT_ID)["sub"] == "user-1"

    assert oidc_issuer.herald_provider(trusted=True) == {"issuer": oidc_issuer.issuer, "clientId": CLIENT_ID,
                                                         "jwksUrl": oidc_issuer.jwks_url, "trusted": True}
    section = oidc_issuer.herald_provider(jwks_file=tmp_path / "file.json")
    assert section == {"issuer": oidc_issuer.issuer, "clientId": CLIENT_ID, "jwksFile": str(tmp_path / "file.json")}
    assert json.loads((tmp_path / "file.json").read_text()) == oidc_issuer.jwks()

    oidc_issuer.rotate(keep_old=False)
    with pytest.raises(jwt.PyJWKClientError):
        _verify(oidc_issuer, old_token)

    oidc_issuer.jwks_status = 503
    assert requests.get(oidc_issuer.jwks_url, timeout=TIMEOUT).status_code == 503
    oidc_issuer.jwks_status = None
    assert requests.get(oidc_issuer.jwks_url, timeout=TIMEOUT).status_code == 200

    other = oidc_issuer_factory(client_id="other-client")
    assert other.port != oidc_issuer.port and other.kid not in oidc_issuer.kids
    token = other.id_token("user-9")
    assert _verify(other, token, audience="other-client")["iss"] == other.issuer
    with pytest.raises(jwt.PyJWKClientError):  # other's key is not in this issuer's JWKS
        _verify(oidc_issuer, token, audience="other-client", issuer=other.issuer)


# =========================================================================== OAuth 1.0a (Twitter)
def _get(provider: OAuth1Provider, authorization=None, url=None):
    headers = {"Authorization": authorization} if authorization else {}
    return requests.get(url or provider.verify_credentials_url(), headers=headers, timeout=TIMEOUT)


def _rfc5849_header(url: str, consumer_key: str, consumer_secret: str, token: str, token_secret: str,
                    nonce: str, timestamp: str) -> str:
    """A hand-written RFC 5849 HMAC-SHA1 signer (not oauthlib), as Herald's Swift signer works."""
    enc = lambda s: quote(s, safe="-._~")  # noqa: E731
    parts = urlsplit(url)
    oauth = {"oauth_consumer_key": consumer_key, "oauth_nonce": nonce, "oauth_signature_method": "HMAC-SHA1",
             "oauth_timestamp": timestamp, "oauth_token": token, "oauth_version": "1.0"}
    params = sorted((enc(k), enc(v)) for k, v in [*parse_qsl(parts.query, keep_blank_values=True), *oauth.items()])
    base = "&".join(["GET", enc(f"{parts.scheme}://{parts.netloc}{parts.path}"),
                     enc("&".join(f"{k}={v}" for k, v in params))])
    key = f"{enc(consumer_secret)}&{enc(token_secret)}".encode()
    oauth["oauth_signature"] = base64.b64encode(hmac.new(key, base.encode(), hashlib.sha1).digest()).decode()
    return "OAuth " + ", ".join(f'{enc(k)}="{enc(v)}"' for k, v in sorted(oauth.items()))


def test_signed_request_gets_the_user(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user(name="Ann Example", screen_name="ann", email="ann@example.com")
    answer = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret))
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": int(ann.id_str), "id_str": ann.id_str, "name": "Ann Example",
                             "screen_name": "ann", "email": "ann@example.com",
                             "profile_image_url_https": ann.profile_image_url_https}

    url = oauth1_provider.verify_credentials_url(include_email=False)
    no_email = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret, url=url), url=url)
    assert no_email.status_code == 200 and "email" not in no_email.json()

    bob = oauth1_provider.add_user(token="12345-bobToken", secret="bob-secret", id_str="12345", name="Bob",
                                   screen_name="bob")
    assert bob.token == "12345-bobToken"
    assert _get(oauth1_provider, oauth1_provider.client_header(bob.token, bob.secret)).json()["email"] is None

    (first, second, third) = oauth1_provider.requests
    assert all(r.verified and r.status == 200 and r.method == "GET" for r in (first, second, third))
    assert first.path == "/1.1/account/verify_credentials.json"
    assert first.query == {"include_email": ["true"], "skip_status": ["true"]}
    assert first.authorization.startswith("OAuth ") and first.oauth_params["oauth_token"] == ann.token
    assert first.oauth_params["oauth_consumer_key"] == oauth1_provider.consumer_key
    assert second.query == {"skip_status": ["true"]}
    assert len(oauth1_provider.verified_requests) == 3


def test_an_independent_rfc5849_signer_is_accepted(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user(email="ann@example.com")
    url = oauth1_provider.verify_credentials_url()
    for nonce in (secrets.token_hex(16), "kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", "a+b/c=d~e"):
        header = _rfc5849_header(url, oauth1_provider.consumer_key, oauth1_provider.consumer_secret,
                                 ann.token, ann.secret, nonce, str(int(time.time())))
        answer = _get(oauth1_provider, header)
        assert answer.status_code == 200, (nonce, answer.text)
    header = _rfc5849_header(url, oauth1_provider.consumer_key, oauth1_provider.consumer_secret + "x",
                             ann.token, ann.secret, secrets.token_hex(16), str(int(time.time())))
    assert _get(oauth1_provider, header).status_code == 401


COULD_NOT_AUTHENTICATE = {"errors": [{"code": 32, "message": "Could not authenticate you."}]}


def test_bad_signatures_are_refused(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user(email="ann@example.com")

    wrong_consumer_secret = _get(oauth1_provider, oauth1_provider.client_header(
        ann.token, ann.secret, consumer_secret="not-the-consumer-secret"))
    assert wrong_consumer_secret.status_code == 401 and wrong_consumer_secret.json() == COULD_NOT_AUTHENTICATE

    wrong_token_secret = _get(oauth1_provider, oauth1_provider.client_header(ann.token, "not-the-token-secret"))
    assert wrong_token_secret.status_code == 401 and wrong_token_secret.json() == COULD_NOT_AUTHENTICATE

    wrong_consumer_key = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret,
                                                                             consumer_key="someone-elses-key"))
    assert wrong_consumer_key.status_code == 401 and wrong_consumer_key.json() == COULD_NOT_AUTHENTICATE

    # Signed for one query, sent with another.
    signed_for = oauth1_provider.verify_credentials_url(include_email=False)
    tampered = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret, url=signed_for))
    assert tampered.status_code == 401 and tampered.json() == COULD_NOT_AUTHENTICATE

    # Signed for another host (the base string URI comes from the Host header).
    other_host = oauth1_provider.verify_credentials_url().replace("127.0.0.1", "localhost")
    assert _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret, url=other_host)).status_code == 401

    unknown_token = _get(oauth1_provider, oauth1_provider.client_header("999-unknown", "whatever"))
    assert unknown_token.status_code == 401 and unknown_token.json()["errors"][0]["code"] == 89

    stale = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret,
                                                                timestamp=str(int(time.time()) - 601)))
    assert stale.status_code == 401 and stale.json()["errors"][0]["code"] == 135

    missing = _get(oauth1_provider)
    assert missing.status_code == 400 and missing.json()["errors"][0]["code"] == 215

    assert [r.verified for r in oauth1_provider.requests] == [False] * 8
    assert [r.status for r in oauth1_provider.requests] == [401] * 7 + [400]
    assert oauth1_provider.requests[-1].authorization is None

    # The same account still works with a correct signature.
    assert _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret)).status_code == 200


def test_other_paths_and_outages(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user()
    url = f"{oauth1_provider.base_url}/1.1/users/show.json"
    other = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret, url=url), url=url)
    assert other.status_code == 404 and other.json()["errors"][0]["code"] == 34

    oauth1_provider.outage = 503
    down = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret))
    assert down.status_code == 503 and not oauth1_provider.requests[-1].verified
    oauth1_provider.outage = None
    assert _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret)).status_code == 200


def test_module_level_client_header_matches_oauthlib_defaults(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user()
    header = client_header(oauth1_provider.verify_credentials_url(), oauth1_provider.consumer_key,
                           oauth1_provider.consumer_secret, ann.token, ann.secret)
    assert 'oauth_signature_method="HMAC-SHA1"' in header and 'oauth_version="1.0"' in header
    assert _get(oauth1_provider, header).status_code == 200
    assert oauth1_provider.herald_provider() == {"consumerKey": oauth1_provider.consumer_key,
                                                 "consumerSecret": oauth1_provider.consumer_secret,
                                                 "apiBaseUrl": oauth1_provider.base_url}

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
from urllib.parse import parse_qs, parse_qsl, quote, quote_plus, urlencode, urlsplit

import jwt
import pytest
import requests
from oauthlib.oauth1 import SIGNATURE_HMAC_SHA1, Client

from idp_peers import CLIENT_ID, HTML, OAuth1Provider, OIDCIssuer, client_header, new_rsa_key

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


# =========================================================================== OAuth 1.0a 3-legged flow (Twitter)
CALLBACK = "http://127.0.0.1:9/__/auth/handler?apiKey=k1&providerId=twitter.com"


def _oauth_post(url: str, consumer_key: str, consumer_secret: str, *, token=None, token_secret=None,
                callback_uri=None, verifier=None, body=None, timestamp=None) -> requests.Response:
    """POST `url` signed by oauthlib.oauth1.Client (HMAC-SHA1, protocol parameters in the Authorization
    header), as a correct client would. `body`: form fields, signed too."""
    client = Client(consumer_key, client_secret=consumer_secret, resource_owner_key=token,
                    resource_owner_secret=token_secret, callback_uri=callback_uri, verifier=verifier,
                    signature_method=SIGNATURE_HMAC_SHA1, timestamp=timestamp)
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
    uri, headers, signed_body = client.sign(url, http_method="POST", body=urlencode(body) if body else None,
                                            headers=headers)
    return requests.post(uri, headers=headers, data=signed_body, timeout=TIMEOUT)


def _request_token(provider: OAuth1Provider, callback_uri=CALLBACK, **kwargs) -> requests.Response:
    return _oauth_post(provider.request_token_url, kwargs.pop("consumer_key", provider.consumer_key),
                       kwargs.pop("consumer_secret", provider.consumer_secret), callback_uri=callback_uri, **kwargs)


def _access_token(provider: OAuth1Provider, token: str, secret: str, verifier, **kwargs) -> requests.Response:
    return _oauth_post(provider.access_token_url, provider.consumer_key,
                       kwargs.pop("consumer_secret", provider.consumer_secret), token=token, token_secret=secret,
                       verifier=verifier, **kwargs)


def _form(answer: requests.Response) -> list:
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"] == HTML
    return parse_qsl(answer.text, keep_blank_values=True, strict_parsing=True)


def _new_request_token(provider: OAuth1Provider, callback_uri=CALLBACK) -> tuple:
    form = dict(_form(_request_token(provider, callback_uri)))
    return form["oauth_token"], form["oauth_token_secret"]


def _browser(url: str) -> requests.Response:
    """The browser's GET, without following the redirect back to the callback."""
    return requests.get(url, allow_redirects=False, timeout=TIMEOUT)


def _approve(provider: OAuth1Provider, token: str, account) -> str:
    provider.approve_as = account
    answer = _browser(provider.authenticate_url(token))
    assert answer.status_code == 302, answer.text
    return parse_qs(urlsplit(answer.headers["Location"]).query)["oauth_verifier"][0]


def _code(answer: requests.Response) -> int:
    return answer.json()["errors"][0]["code"]


def test_three_legged_flow_signs_in_the_approved_user(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user(name="Ann", screen_name="ann", email="ann@example.com")

    # 1. request token: consumer only, oauth_callback among the protocol parameters
    answer = _request_token(oauth1_provider)
    form = _form(answer)
    assert [k for k, _ in form] == ["oauth_token", "oauth_token_secret", "oauth_callback_confirmed"]
    token, secret = form[0][1], form[1][1]
    assert form[2][1] == "true" and len(token) == len(secret) == 32
    state = oauth1_provider.request_tokens[token]
    assert state.secret == secret and state.callback == CALLBACK and state.state == "pending"
    first = oauth1_provider.requests[-1]
    assert first.path == "/oauth/request_token" and first.method == "POST" and first.verified
    assert first.oauth_params["oauth_callback"] == CALLBACK and "oauth_token" not in first.oauth_params

    # 2. the browser at the approval page: back to the callback with the token and a verifier
    oauth1_provider.approve_as = ann
    answer = _browser(oauth1_provider.authenticate_url(token, force_login="true", lang="fr"))
    assert answer.status_code == 302 and answer.headers["Content-Type"] == HTML
    location = answer.headers["Location"]
    assert location.startswith(CALLBACK + "&oauth_token=")
    back = parse_qs(urlsplit(location).query)
    assert back["apiKey"] == ["k1"] and back["oauth_token"] == [token]
    verifier = back["oauth_verifier"][0]
    assert oauth1_provider.authorizations == [{"oauth_token": token, "force_login": "true", "lang": "fr"}]
    assert state.state == "approved" and state.account is ann and state.verifier == verifier

    # 3. access token: consumer + request token, oauth_verifier in the Authorization header
    answer = _access_token(oauth1_provider, token, secret, verifier)
    assert _form(answer) == [("oauth_token", ann.token), ("oauth_token_secret", ann.secret),
                             ("user_id", ann.id_str), ("screen_name", "ann")]
    assert oauth1_provider.requests[-1].verified and oauth1_provider.requests[-1].oauth_params[
        "oauth_verifier"] == verifier
    assert state.state == "used"

    # 4. the access token works at verify_credentials
    me = _get(oauth1_provider, oauth1_provider.client_header(ann.token, ann.secret))
    assert me.status_code == 200 and me.json()["email"] == "ann@example.com"

    # The request token is single use.
    again = _access_token(oauth1_provider, token, secret, verifier)
    assert again.status_code == 401 and _code(again) == 89
    assert [(r.path, r.status) for r in oauth1_provider.requests] == [
        ("/oauth/request_token", 200), ("/oauth/authenticate", 302), ("/oauth/access_token", 200),
        ("/1.1/account/verify_credentials.json", 200), ("/oauth/access_token", 401)]


def test_verifier_in_the_body_or_query_and_the_authorize_path(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user()
    callback = "https://app.example.com/cb"  # no query: the answer starts one
    token, secret = _new_request_token(oauth1_provider, callback)
    oauth1_provider.approve_as = ann
    answer = _browser(oauth1_provider.authenticate_url(token, path="/oauth/authorize"))
    assert answer.status_code == 302 and answer.headers["Location"].startswith(f"{callback}?oauth_token={token}&")
    verifier = parse_qs(urlsplit(answer.headers["Location"]).query)["oauth_verifier"][0]
    # oauth_verifier as a (signed) form field beside the Authorization header, as Twitter's docs show it
    answer = _access_token(oauth1_provider, token, secret, None, body={"oauth_verifier": verifier})
    assert dict(_form(answer))["oauth_token"] == ann.token
    assert "oauth_verifier" not in (oauth1_provider.requests[-1].authorization or "")
    assert oauth1_provider.requests[-1].oauth_params.get("oauth_verifier") == verifier  # taken from the body

    token, secret = _new_request_token(oauth1_provider, callback)
    verifier = _approve(oauth1_provider, token, ann)
    url = f"{oauth1_provider.access_token_url}?{urlencode({'oauth_verifier': verifier})}"
    answer = _oauth_post(url, oauth1_provider.consumer_key, oauth1_provider.consumer_secret, token=token,
                         token_secret=secret)
    assert dict(_form(answer))["user_id"] == ann.id_str
    assert oauth1_provider.requests[-1].oauth_params.get("oauth_verifier") == verifier  # taken from the query


def test_three_legged_refusals(oauth1_provider: OAuth1Provider):
    ann = oauth1_provider.add_user()

    # request_token
    bad = _request_token(oauth1_provider, consumer_secret="not-the-consumer-secret")
    assert bad.status_code == 401 and bad.json() == COULD_NOT_AUTHENTICATE
    bad = _request_token(oauth1_provider, consumer_key="someone-elses-key")
    assert bad.status_code == 401 and bad.json() == COULD_NOT_AUTHENTICATE
    bad = _request_token(oauth1_provider, callback_uri=None)
    assert bad.status_code == 400 and _code(bad) == 215
    assert oauth1_provider.requests[-1].error_description == "Missing callback URI."
    bad = _request_token(oauth1_provider, token=ann.token, token_secret=ann.secret)  # must be consumer-only
    assert bad.status_code == 401 and _code(bad) == 32
    bad = _request_token(oauth1_provider, callback_uri="oob")
    assert bad.status_code == 403 and _code(bad) == 415
    bad = _request_token(oauth1_provider, timestamp=str(int(time.time()) - 601))
    assert bad.status_code == 401 and _code(bad) == 135
    bad = requests.get(oauth1_provider.request_token_url, timeout=TIMEOUT)
    assert bad.status_code == 404 and _code(bad) == 34
    assert not oauth1_provider.request_tokens and not any(r.verified for r in oauth1_provider.requests)

    # authenticate: unknown token, no decision, deny
    bad = _browser(oauth1_provider.authenticate_url("unknown-token"))
    assert bad.status_code == 401 and _code(bad) == 89
    token, secret = _new_request_token(oauth1_provider)
    undecided = _browser(oauth1_provider.authenticate_url(token))
    assert undecided.status_code == 200 and undecided.headers["Content-Type"] == HTML
    oauth1_provider.approve_as = "deny"
    denied = _browser(oauth1_provider.authenticate_url(token))
    assert denied.status_code == 302 and denied.headers["Location"] == f"{CALLBACK}&denied={token}"
    assert oauth1_provider.request_tokens[token].state == "denied"
    assert _code(_browser(oauth1_provider.authenticate_url(token))) == 89  # decided once
    bad = _access_token(oauth1_provider, token, secret, "any-verifier")
    assert bad.status_code == 401 and _code(bad) == 89

    # access_token: wrong verifier, signatures, no verifier; then the right one, once
    token, secret = _new_request_token(oauth1_provider)
    verifier = _approve(oauth1_provider, token, ann)
    bad = _access_token(oauth1_provider, token, secret, verifier[::-1])
    assert bad.status_code == 401 and _code(bad) == 32
    assert oauth1_provider.requests[-1].error_description == "wrong oauth_verifier"
    bad = _access_token(oauth1_provider, token, "not-the-token-secret", verifier)
    assert bad.status_code == 401 and _code(bad) == 32
    bad = _access_token(oauth1_provider, token, secret, verifier, consumer_secret="not-the-consumer-secret")
    assert bad.status_code == 401 and _code(bad) == 32
    bad = _access_token(oauth1_provider, token, secret, None)
    assert bad.status_code == 400 and _code(bad) == 215
    bad = _access_token(oauth1_provider, "unknown-token", secret, verifier)
    assert bad.status_code == 401 and _code(bad) == 89
    assert oauth1_provider.request_tokens[token].state == "approved"  # failures do not use it up
    assert _access_token(oauth1_provider, token, secret, verifier).status_code == 200
    bad = _access_token(oauth1_provider, token, secret, verifier)
    assert bad.status_code == 401 and _code(bad) == 89
    assert _code(_browser(oauth1_provider.authenticate_url(token))) == 89

    # request tokens expire (10 minutes)
    token, secret = _new_request_token(oauth1_provider)
    assert 590 < oauth1_provider.request_tokens[token].expires_at - time.time() <= 600
    oauth1_provider.request_tokens[token].expires_at = time.time() - 1
    assert _code(_browser(oauth1_provider.authenticate_url(token))) == 89
    token, secret = _new_request_token(oauth1_provider)
    verifier = _approve(oauth1_provider, token, ann)
    oauth1_provider.request_tokens[token].expires_at = time.time() - 1
    bad = _access_token(oauth1_provider, token, secret, verifier)
    assert bad.status_code == 401 and _code(bad) == 89


# =========================================================================== OIDC authorization-code flow
REDIRECT = "http://127.0.0.1:9/__/auth/handler?apiKey=k1"
ANN = {"sub": "ann-1", "email": "Ann@Example.com", "email_verified": True, "name": "Ann"}


def _authorize(issuer: OIDCIssuer, redirect_uri=REDIRECT, **kwargs) -> requests.Response:
    return _browser(issuer.authorize_url(redirect_uri, **kwargs))


def _grant(issuer: OIDCIssuer, redirect_uri=REDIRECT, **kwargs) -> str:
    answer = _authorize(issuer, redirect_uri, **kwargs)
    assert answer.status_code == 302, answer.text
    return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]


def _basic(client_id: str, client_secret: str) -> str:
    """RFC 6749 §2.3.1: each part form-urlencoded, then HTTP Basic."""
    return "Basic " + base64.b64encode(f"{quote_plus(client_id)}:{quote_plus(client_secret)}".encode()).decode()


def _token(issuer: OIDCIssuer, code: str, redirect_uri=REDIRECT, secret=None, basic=False, **extra):
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, **extra}
    headers = {}
    secret = issuer.client_secret if secret is None else secret
    if basic:
        headers["Authorization"] = _basic(issuer.client_id, secret)
    else:
        form.update(client_id=issuer.client_id, client_secret=secret)
    return requests.post(issuer.token_endpoint, data=form, headers=headers, timeout=TIMEOUT)


def test_authorization_code_flow(oidc_issuer: OIDCIssuer):
    disco = requests.get(oidc_issuer.discovery_url, timeout=TIMEOUT).json()
    assert disco["authorization_endpoint"] == f"{oidc_issuer.base_url}/authorize" == oidc_issuer.authorization_endpoint
    assert disco["token_endpoint"] == f"{oidc_issuer.base_url}/token" == oidc_issuer.token_endpoint
    assert disco["response_types_supported"] == ["code"]
    assert disco["token_endpoint_auth_methods_supported"] == ["client_secret_post", "client_secret_basic"]

    oidc_issuer.approve_as = ANN
    answer = _authorize(oidc_issuer, state="st-1", nonce="n-1", prompt="select_account")
    assert answer.status_code == 302
    location = answer.headers["Location"]
    assert location.startswith(REDIRECT + "&code=")
    back = parse_qs(urlsplit(location).query)
    assert back["state"] == ["st-1"] and back["apiKey"] == ["k1"]
    code = back["code"][0]
    assert oidc_issuer.authorizations == [{"client_id": CLIENT_ID, "redirect_uri": REDIRECT, "response_type": "code",
                                           "scope": "openid email profile", "state": "st-1", "nonce": "n-1",
                                           "prompt": "select_account"}]
    assert 55 < oidc_issuer.codes[code].expires_at - time.time() <= 60

    answer = _token(oidc_issuer, code)  # client_secret_post
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("application/json")
    assert answer.headers["Cache-Control"] == "no-store"
    body = answer.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["scope"] == "openid email profile"
    assert body["access_token"] and set(body) == {"access_token", "token_type", "expires_in", "id_token", "scope"}
    claims = _verify(oidc_issuer, body["id_token"])
    assert claims["sub"] == "ann-1" and claims["email"] == "Ann@Example.com" and claims["email_verified"] is True
    assert claims["name"] == "Ann" and claims["nonce"] == "n-1"
    assert claims["iss"] == oidc_issuer.issuer and claims["aud"] == CLIENT_ID

    # client_secret_basic; no nonce at /authorize → none in the token
    code = _grant(oidc_issuer, state="st-2")
    answer = _token(oidc_issuer, code, basic=True)
    assert answer.status_code == 200, answer.text
    assert "nonce" not in _verify(oidc_issuer, answer.json()["id_token"])
    assert [(t.auth_method, t.status, t.error) for t in oidc_issuer.token_requests] == [
        ("client_secret_post", 200, ""), ("client_secret_basic", 200, "")]
    assert oidc_issuer.token_requests[0].form["code"] and oidc_issuer.token_requests[1].client_id == CLIENT_ID


def test_basic_credentials_are_form_urlencoded_and_pkce(oidc_issuer_factory):
    issuer = oidc_issuer_factory(client_id="herald:test client", client_secret="s3cr+t/with:odd chars%")
    issuer.approve_as = {"sub": "u-2", "email": "u2@example.com", "email_verified": False, "hd": "example.com"}
    answer = _token(issuer, _grant(issuer, nonce="n-2"), basic=True)
    assert answer.status_code == 200, answer.text
    claims = _verify(issuer, answer.json()["id_token"], audience="herald:test client")
    assert claims["email_verified"] is False and claims["hd"] == "example.com" and claims["nonce"] == "n-2"
    # The raw (not form-urlencoded) secret in Basic fails.
    raw = "Basic " + base64.b64encode(f"{issuer.client_id}:{issuer.client_secret}".encode()).decode()
    bad = requests.post(issuer.token_endpoint, data={"grant_type": "authorization_code",
                                                     "code": _grant(issuer), "redirect_uri": REDIRECT},
                        headers={"Authorization": raw}, timeout=TIMEOUT)
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    assert bad.headers["WWW-Authenticate"].startswith("Basic")

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    code = _grant(issuer, code_challenge=challenge, code_challenge_method="S256")
    bad = _token(issuer, code, code_verifier="not-" + verifier)
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"
    assert _token(issuer, code, code_verifier=verifier).status_code == 200


def test_authorization_code_refusals(oidc_issuer: OIDCIssuer):
    # /authorize: a bad request is answered 400 text/plain, never redirected
    for url in (oidc_issuer.authorize_url(REDIRECT, client_id="someone-else"),
                oidc_issuer.authorize_url(REDIRECT, response_type="token"),
                oidc_issuer.authorize_url(REDIRECT, scope="email profile"),
                oidc_issuer.authorize_url("javascript:alert(1)"),
                oidc_issuer.authorize_url(REDIRECT) + "&state=a&state=b",
                f"{oidc_issuer.authorization_endpoint}?client_id={quote(CLIENT_ID)}&response_type=code&scope=openid"):
        answer = _browser(url)
        assert answer.status_code == 400 and answer.headers["Content-Type"] == "text/plain; charset=utf-8", url
        assert "Location" not in answer.headers
    assert len(oidc_issuer.authorizations) == 6 and not oidc_issuer.codes

    undecided = _authorize(oidc_issuer, state="s")
    assert undecided.status_code == 200 and undecided.headers["Content-Type"] == HTML
    oidc_issuer.approve_as = "deny"
    denied = _authorize(oidc_issuer, state="s 1")
    assert denied.status_code == 302 and denied.headers["Location"] == f"{REDIRECT}&error=access_denied&state=s+1"
    assert not oidc_issuer.codes

    # /token
    oidc_issuer.approve_as = ANN
    code = _grant(oidc_issuer, nonce="n")
    bad = _token(oidc_issuer, code, secret="not-the-secret")
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    bad = _token(oidc_issuer, code, secret="not-the-secret", basic=True)
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    bad = requests.post(oidc_issuer.token_endpoint, data={"grant_type": "authorization_code", "code": code,
                                                          "redirect_uri": REDIRECT}, timeout=TIMEOUT)
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"  # no client authentication
    bad = requests.post(oidc_issuer.token_endpoint, timeout=TIMEOUT,
                        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                              "client_id": CLIENT_ID, "client_secret": oidc_issuer.client_secret},
                        headers={"Authorization": _basic(CLIENT_ID, oidc_issuer.client_secret)})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_request"  # two methods
    bad = _token(oidc_issuer, code, redirect_uri=REDIRECT + "&x=1")
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_grant"
    bad = _token(oidc_issuer, code, grant_type="refresh_token")
    assert bad.status_code == 400 and bad.json()["error"] == "unsupported_grant_type"
    bad = requests.post(oidc_issuer.token_endpoint, timeout=TIMEOUT,
                        json={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                              "client_id": CLIENT_ID, "client_secret": oidc_issuer.client_secret})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_request"  # not a form
    assert requests.get(oidc_issuer.token_endpoint, timeout=TIMEOUT).status_code == 405

    assert _token(oidc_issuer, code).status_code == 200  # the failures did not use the code up
    reused = _token(oidc_issuer, code)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    unknown = _token(oidc_issuer, "no-such-code")
    assert unknown.status_code == 400 and unknown.json()["error"] == "invalid_grant"
    code = _grant(oidc_issuer)
    oidc_issuer.codes[code].expires_at = time.time() - 1
    expired = _token(oidc_issuer, code)
    assert expired.status_code == 400 and expired.json()["error"] == "invalid_grant"
    assert [t.error for t in oidc_issuer.token_requests] == [
        "invalid_client", "invalid_client", "invalid_client", "invalid_request", "invalid_grant",
        "unsupported_grant_type", "invalid_request", "", "invalid_grant", "invalid_grant", "invalid_grant"]

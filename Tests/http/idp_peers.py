"""Real identity-provider peers for the #11 tests, on loopback (fixtures in conftest.py).

* `OIDCIssuer`: an OpenID Connect issuer. It serves `GET /jwks` and
  `GET /.well-known/openid-configuration` and signs ID tokens (PyJWT, RS256) with an RSA-2048
  key it generates itself. It can also forge tokens (a foreign key, `alg: none`, HS256 keyed with
  its own public key), expire them, and rotate keys.
* `OAuth1Provider`: Twitter's `GET /1.1/account/verify_credentials.json`. Every request's
  OAuth 1.0a HMAC-SHA1 signature is checked by oauthlib's `ResourceEndpoint` before it answers.
* `client_header(...)`: signs a request with `oauthlib.oauth1.Client`, as a correct client would.
  Used to test the provider itself.

Neither peer needs the herald binary. Both are `http.server.ThreadingHTTPServer`s on
127.0.0.1:<free port> with daemon handler threads. Each answer closes its connection
(HTTP/1.0), so every fetch Herald makes shows up as one request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from oauthlib.oauth1 import SIGNATURE_HMAC_SHA1, Client, RequestValidator, ResourceEndpoint

CLIENT_ID = "herald-test-client.apps.example.com"  # the ID tokens' default `aud`
VERIFY_CREDENTIALS_PATH = "/1.1/account/verify_credentials.json"
TWITTER_CONSUMER_KEY = "hRldTstCnsmrKy0123456789a"  # 25 characters, like Twitter's API keys


def new_rsa_key() -> rsa.RSAPrivateKey:
    """A fresh RSA-2048 private key, e.g. a foreign key for forging tokens."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


# =========================================================================== the shared server
class _Handler(BaseHTTPRequestHandler):
    """Hands every request to `server.peer.handle(handler)`; the peer answers with `reply`."""

    server_version = "HeraldTestPeer/1.0"

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.server.peer.handle(self)  # type: ignore[attr-defined]

    do_POST = do_HEAD = do_PUT = do_DELETE = do_GET

    def reply(self, status: int, body: Any, headers: Optional[dict] = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet; the peers keep their own logs
        pass


class _LoopbackPeer:
    """A ThreadingHTTPServer on 127.0.0.1:<free port> in a daemon thread. Use start()/stop() or `with`."""

    def __init__(self) -> None:
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self.port: Optional[int] = None

    def start(self):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.peer = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"{type(self).__name__}-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self.port is not None, f"{type(self).__name__} is not started"
        return f"http://127.0.0.1:{self.port}"

    def handle(self, h: _Handler) -> None:  # pragma: no cover - overridden
        h.reply(404, {"error": "not found"})


# =========================================================================== OIDC issuer
@dataclass
class _SigningKey:
    kid: str
    private: rsa.RSAPrivateKey

    def jwk(self) -> dict:
        jwk = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        jwk.pop("key_ops", None)  # Google's and Apple's JWKS carry kty, kid, use, alg, n, e
        return {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256", "n": jwk["n"], "e": jwk["e"]}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)


class OIDCIssuer(_LoopbackPeer):
    """An OpenID Connect issuer on loopback.

    `issuer` is its base URL (the tokens' default `iss`). It serves `GET /jwks` and
    `GET /.well-known/openid-configuration`. `id_token(...)` signs with the current key.

    Knobs for failure tests (they take effect at once):
      * `jwks_status`: answer /jwks with this status instead of the key set (an outage); None = normal.
      * `jwks_max_age`: the `Cache-Control: public, max-age=N` sent with /jwks; None = no header.
    Logs: `requests` is a list of (method, path-with-query); `jwks_requests` counts GET /jwks.
    """

    def __init__(self, client_id: str = CLIENT_ID) -> None:
        super().__init__()
        self.client_id = client_id
        self._keys: list = [_SigningKey(self._new_kid(), new_rsa_key())]
        self.jwks_status: Optional[int] = None
        self.jwks_max_age: Optional[int] = 3600
        self.requests: list = []

    @staticmethod
    def _new_kid() -> str:
        return secrets.token_hex(20)  # Google's kids are 40 hex digits

    # ------------------------------------------------------------------ addresses
    @property
    def issuer(self) -> str:
        return self.base_url

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks"

    @property
    def discovery_url(self) -> str:
        return f"{self.base_url}/.well-known/openid-configuration"

    # ------------------------------------------------------------------ keys
    @property
    def kid(self) -> str:
        """The kid of the current signing key."""
        return self._keys[-1].kid

    @property
    def kids(self) -> list:
        with self._lock:
            return [k.kid for k in self._keys]

    @property
    def private_key(self) -> rsa.RSAPrivateKey:
        return self._keys[-1].private

    def jwks(self) -> dict:
        with self._lock:
            return {"keys": [k.jwk() for k in self._keys]}

    def jwks_file(self, path: Union[str, Path]) -> Path:
        """Write the current JWKS to `path` (as a provider's `jwksFile`); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.jwks(), indent=2), encoding="utf-8")
        return path

    def rotate(self, keep_old: bool = True) -> str:
        """Add a new key, which signs from now on, to the JWKS. With keep_old=False the
        old keys leave the JWKS, so tokens they signed stop verifying. Returns the new kid."""
        key = _SigningKey(self._new_kid(), new_rsa_key())
        with self._lock:
            self._keys = (self._keys if keep_old else []) + [key]
        return key.kid

    @property
    def jwks_requests(self) -> int:
        with self._lock:
            return sum(1 for method, path in self.requests if method == "GET" and urlsplit(path).path == "/jwks")

    # ------------------------------------------------------------------ tokens
    def claims(self, sub: str, email: Optional[str] = None, email_verified: bool = True,
               aud: Union[str, list, None] = None, iss: Optional[str] = None, exp_in: int = 600,
               nonce: Optional[str] = None, name: Optional[str] = None, picture: Optional[str] = None,
               extra: Optional[dict] = None) -> dict:
        """The claims id_token() signs. `extra` is merged last, and a None value there deletes the claim."""
        now = int(time.time())
        claims: dict = {
            "iss": self.issuer if iss is None else iss,
            "aud": self.client_id if aud is None else aud,
            "sub": sub,
            "iat": now if exp_in > 0 else now + exp_in - 3600,
            "exp": now + exp_in,
            "auth_time": now if exp_in > 0 else now + exp_in - 3600,
        }
        if email is not None:
            claims["email"] = email
            claims["email_verified"] = email_verified
        if nonce is not None:
            claims["nonce"] = nonce
        if name is not None:
            claims["name"] = name
        if picture is not None:
            claims["picture"] = picture
        for key, value in (extra or {}).items():
            if value is None:
                claims.pop(key, None)
            else:
                claims[key] = value
        return claims

    def id_token(self, sub: str, email: Optional[str] = None, email_verified: bool = True,
                 aud: Union[str, list, None] = None, iss: Optional[str] = None, exp_in: int = 600,
                 nonce: Optional[str] = None, name: Optional[str] = None, picture: Optional[str] = None,
                 key: Optional[rsa.RSAPrivateKey] = None, kid: Optional[str] = None, alg: str = "RS256",
                 extra: Optional[dict] = None) -> str:
        """A compact JWT ID token.

        * aud defaults to CLIENT_ID (the issuer's client_id), iss to `issuer`. exp_in < 0 gives a token
          that has already expired (iat/auth_time move back an hour more).
        * key: sign with this RSA private key instead of the issuer's. That is a forgery: the header
          still names the issuer's current kid unless `kid` says otherwise.
        * kid: the header's kid (default: the current key's). kid="" leaves it out.
        * alg "RS256" (or "RS384"/"RS512"/"PS256", also with the RSA key); "none" gives an unsigned
          token (empty signature); "HS256" is the alg-confusion forgery: HMAC keyed with the issuer's
          public key PEM.
        * extra: more claims, or None values to delete one (e.g. {"sub": None}).
        """
        claims = self.claims(sub, email=email, email_verified=email_verified, aud=aud, iss=iss, exp_in=exp_in,
                             nonce=nonce, name=name, picture=picture, extra=extra)
        header: dict = {}
        kid = self.kid if kid is None else kid
        if kid:
            header["kid"] = kid
        if alg == "none":
            return jwt.encode(claims, None, algorithm="none", headers=header)
        if alg.upper().startswith("HS"):
            # PyJWT refuses PEM keys as HMAC secrets, so this forgery is assembled by hand.
            secret = self._keys[-1].public_pem()
            digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg.upper()]
            head = {"alg": alg.upper(), "typ": "JWT", **header}
            signing_input = (_b64url(json.dumps(head, separators=(",", ":")).encode()) + "."
                             + _b64url(json.dumps(claims, separators=(",", ":")).encode()))
            sig = hmac.new(secret, signing_input.encode("ascii"), digest).digest()
            return signing_input + "." + _b64url(sig)
        return jwt.encode(claims, key if key is not None else self.private_key, algorithm=alg, headers=header)

    def herald_provider(self, jwks_file: Union[str, Path, None] = None, **extra: Any) -> dict:
        """The body of a herald.yaml OIDC provider section (`providers.oidc.<name>`, `providers.google`,
        `providers.apple`): issuer, clientId, jwksUrl, or jwksFile instead of jwksUrl when jwks_file is
        given (the JWKS is written there now). `extra` adds keys, e.g. trusted=True. Example:
        server(providers={"oidc": {"acme": oidc_issuer.herald_provider()}})."""
        section: dict = {"issuer": self.issuer, "clientId": self.client_id}
        if jwks_file is not None:
            section["jwksFile"] = str(self.jwks_file(jwks_file))
        else:
            section["jwksUrl"] = self.jwks_url
        return {**section, **extra}

    # ------------------------------------------------------------------ HTTP
    def handle(self, h: _Handler) -> None:
        with self._lock:
            self.requests.append((h.command, h.path))
        path = urlsplit(h.path).path
        if h.command not in ("GET", "HEAD"):
            h.reply(405, {"error": "method not allowed"}, {"Allow": "GET"})
        elif path == "/jwks":
            if self.jwks_status is not None:
                h.reply(self.jwks_status, {"error": "jwks unavailable"})
                return
            headers = {} if self.jwks_max_age is None else {"Cache-Control": f"public, max-age={self.jwks_max_age}"}
            h.reply(200, self.jwks(), headers)
        elif path == "/.well-known/openid-configuration":
            h.reply(200, {
                "issuer": self.issuer,
                "jwks_uri": self.jwks_url,
                "authorization_endpoint": f"{self.base_url}/authorize",
                "token_endpoint": f"{self.base_url}/token",
                "response_types_supported": ["code", "id_token", "code id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "claims_supported": ["aud", "email", "email_verified", "exp", "iat", "iss", "name", "nonce",
                                     "picture", "sub"],
            })
        else:
            h.reply(404, {"error": "not found"})


# =========================================================================== OAuth 1.0a (Twitter)
@dataclass
class TwitterAccount:
    """One access token the provider knows: its secret, and the user verify_credentials answers with."""
    token: str
    secret: str
    id_str: str
    name: str
    screen_name: str
    email: Optional[str]
    profile_image_url_https: str

    def user(self, include_email: bool) -> dict:
        user = {
            "id": int(self.id_str),
            "id_str": self.id_str,
            "name": self.name,
            "screen_name": self.screen_name,
            "profile_image_url_https": self.profile_image_url_https,
        }
        if include_email:
            user["email"] = self.email  # null when the user has none, as Twitter answers
        return user


@dataclass
class OAuth1Request:
    """One request the provider saw. `verified` is oauthlib's verdict on the signature (False when
    it never got that far). `status` and `error_code` are what was answered (error_code 0 = success)."""
    method: str
    path: str
    query: dict  # parse_qs of the query string: name -> [values]
    authorization: Optional[str]
    verified: bool
    status: int = 0
    error_code: int = 0
    oauth_params: dict = field(default_factory=dict)
    uri: str = ""


_TWITTER_ERRORS = {
    32: "Could not authenticate you.",
    34: "Sorry, that page does not exist.",
    89: "Invalid or expired token.",
    131: "Internal error.",
    135: "Timestamp out of bounds.",
    215: "Bad Authentication data.",
}


class _TwitterValidator(RequestValidator):
    """Knows one consumer and the provider's access tokens. Accepts any key, token or nonce format
    (Twitter does too) and does not store nonces, but rejects timestamps more than 600 s off."""

    def __init__(self, provider: "OAuth1Provider") -> None:
        super().__init__()
        self.provider = provider

    allowed_signature_methods = (SIGNATURE_HMAC_SHA1,)
    enforce_ssl = False
    timestamp_lifetime = 600
    dummy_client = "dummy-client"
    dummy_access_token = "dummy-access-token"

    @staticmethod
    def _any(value: Optional[str]) -> bool:
        return bool(value) and len(value) <= 512 and all(32 < ord(c) < 127 for c in value)

    def check_client_key(self, client_key):
        return self._any(client_key)

    def check_access_token(self, request_token):
        return self._any(request_token)

    def check_nonce(self, nonce):
        return self._any(nonce)

    def validate_client_key(self, client_key, request):
        return client_key == self.provider.consumer_key

    def get_client_secret(self, client_key, request):
        return self.provider.consumer_secret if client_key == self.provider.consumer_key else "dummy-secret"

    def validate_access_token(self, client_key, token, request):
        return token in self.provider.accounts

    def get_access_token_secret(self, client_key, token, request):
        account = self.provider.accounts.get(token)
        return account.secret if account else "dummy-token-secret"

    def validate_timestamp_and_nonce(self, client_key, timestamp, nonce, request, request_token=None,
                                     access_token=None):
        return True  # the 600 s window is checked before this (timestamp_lifetime), replays are allowed

    def validate_realms(self, client_key, token, request, uri=None, realms=None):
        return True


class OAuth1Provider(_LoopbackPeer):
    """Twitter's `GET /1.1/account/verify_credentials.json`, on loopback.

    Every request is checked by oauthlib's ResourceEndpoint (HMAC-SHA1, the consumer key and secret,
    the access token and its secret, a timestamp within 600 s). Answers are Twitter's:
      * 200 + the user (id, id_str, name, screen_name, profile_image_url_https, and email only with
        include_email=true/t/1);
      * 401 {"errors":[{"code":32,"message":"Could not authenticate you."}]} for a bad signature, an
        unknown consumer key or a wrong secret; code 89 for an unknown access token; code 135 for a
        timestamp outside the window;
      * 400 code 215 when the OAuth parameters are missing; 404 code 34 for other paths.
    The base string URI is taken from the request's Host header, i.e. the URL the client signed.
    `outage`: set to a status (e.g. 503) to answer every request with it, code 131, unverified.
    `requests`: every request as an OAuth1Request.
    """

    def __init__(self, consumer_key: str = TWITTER_CONSUMER_KEY, consumer_secret: Optional[str] = None) -> None:
        super().__init__()
        self.consumer_key = consumer_key
        self.consumer_secret = consumer_secret or secrets.token_urlsafe(37)[:50]
        self.accounts: dict = {}
        self.requests: list = []
        self.outage: Optional[int] = None
        self._endpoint = ResourceEndpoint(_TwitterValidator(self))

    # ------------------------------------------------------------------ setup
    def add_user(self, token: Optional[str] = None, secret: Optional[str] = None, id_str: Optional[str] = None,
                 name: str = "Test User", screen_name: Optional[str] = None, email: Optional[str] = None,
                 profile_image_url_https: Optional[str] = None) -> TwitterAccount:
        """Register an access token and secret with their user. Anything left out is made up in
        Twitter's formats (token "<id>-<random>", a 45-character secret, a 19-digit id)."""
        id_str = id_str or str(10**18 + secrets.randbelow(9 * 10**18))
        account = TwitterAccount(
            token=token or f"{id_str}-{secrets.token_urlsafe(30)[:30]}",
            secret=secret or secrets.token_urlsafe(34)[:45],
            id_str=id_str,
            name=name,
            screen_name=screen_name or f"user{id_str[-6:]}",
            email=email,
            profile_image_url_https=profile_image_url_https
            or f"https://pbs.twimg.example/profile_images/{id_str}/photo_normal.jpg",
        )
        with self._lock:
            self.accounts[account.token] = account
        return account

    # ------------------------------------------------------------------ client side
    def verify_credentials_url(self, include_email: bool = True, skip_status: bool = True) -> str:
        query = {}
        if include_email:
            query["include_email"] = "true"
        if skip_status:
            query["skip_status"] = "true"
        return f"{self.base_url}{VERIFY_CREDENTIALS_PATH}" + (f"?{urlencode(query)}" if query else "")

    def client_header(self, token: str, token_secret: str, *, url: Optional[str] = None, method: str = "GET",
                      consumer_key: Optional[str] = None, consumer_secret: Optional[str] = None,
                      timestamp: Optional[str] = None, nonce: Optional[str] = None) -> str:
        """The Authorization header a correct client sends for `url` (default verify_credentials_url()),
        signed with this provider's consumer unless consumer_key/consumer_secret say otherwise."""
        return client_header(url or self.verify_credentials_url(), consumer_key or self.consumer_key,
                             self.consumer_secret if consumer_secret is None else consumer_secret,
                             token, token_secret, method=method, timestamp=timestamp, nonce=nonce)

    def herald_provider(self, **extra: Any) -> dict:
        """The body of herald.yaml's `providers.twitter` section: consumerKey, consumerSecret, apiBaseUrl
        (`extra` adds keys, e.g. trusted=True). Example: server(providers={"twitter": oauth1_provider.herald_provider()}).
        The secret can go through HERALD_PROVIDERS_TWITTER_CONSUMER_SECRET instead: drop it from the dict."""
        return {"consumerKey": self.consumer_key, "consumerSecret": self.consumer_secret,
                "apiBaseUrl": self.base_url, **extra}

    @property
    def verified_requests(self) -> list:
        with self._lock:
            return [r for r in self.requests if r.verified]

    # ------------------------------------------------------------------ HTTP
    def handle(self, h: _Handler) -> None:
        parts = urlsplit(h.path)
        host = h.headers.get("Host") or f"127.0.0.1:{self.port}"
        uri = f"http://{host}{h.path}"
        headers = {k: v for k, v in h.headers.items()}
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length).decode("utf-8", "replace") if length else None
        entry = OAuth1Request(method=h.command, path=parts.path, query=parse_qs(parts.query, keep_blank_values=True),
                              authorization=h.headers.get("Authorization"), verified=False, uri=uri)

        def answer(status: int, payload: Any, code: int = 0) -> None:
            entry.status, entry.error_code = status, code
            with self._lock:
                self.requests.append(entry)
            h.reply(status, payload)

        def error(status: int, code: int) -> None:
            answer(status, {"errors": [{"code": code, "message": _TWITTER_ERRORS[code]}]}, code)

        if self.outage is not None:
            return error(self.outage, 131)
        if parts.path != VERIFY_CREDENTIALS_PATH:
            return error(404, 34)

        try:
            verified, request = self._endpoint.validate_protected_resource_request(
                uri, http_method=h.command, body=body, headers=headers)
        except Exception:  # oauthlib raises on some malformed input (e.g. a broken header)
            verified, request = False, None
        if request is not None:
            entry.oauth_params = dict(getattr(request, "oauth_params", {}) or {})
        entry.verified = bool(verified)

        if h.command != "GET":  # Twitter: verify_credentials is GET only
            return error(404, 34)
        if verified:
            account = self.accounts[request.resource_owner_key]
            include = (entry.query.get("include_email") or [""])[-1].lower() in ("true", "t", "1")
            return answer(200, account.user(include_email=include))

        params = entry.oauth_params
        if not params or not all(params.get(p) for p in ("oauth_consumer_key", "oauth_signature", "oauth_nonce",
                                                          "oauth_timestamp", "oauth_signature_method")):
            return error(400, 215)
        try:
            skew = abs(time.time() - int(params["oauth_timestamp"]))
        except ValueError:
            skew = float("inf")
        if skew > _TwitterValidator.timestamp_lifetime:
            return error(401, 135)
        log = getattr(request, "validator_log", {}) or {}
        if log and log.get("client") and not log.get("resource_owner"):
            return error(401, 89)
        return error(401, 32)


def client_header(url: str, consumer_key: str, consumer_secret: str, token: str, token_secret: str, *,
                  method: str = "GET", timestamp: Optional[str] = None, nonce: Optional[str] = None) -> str:
    """The OAuth 1.0a HMAC-SHA1 `Authorization` header for `method url` (its query is signed too),
    made by oauthlib.oauth1.Client. timestamp/nonce fix those values (for stale-timestamp tests)."""
    client = Client(consumer_key, client_secret=consumer_secret, resource_owner_key=token,
                    resource_owner_secret=token_secret, signature_method=SIGNATURE_HMAC_SHA1,
                    timestamp=timestamp, nonce=nonce)
    _, headers, _ = client.sign(url, http_method=method)
    return headers["Authorization"]

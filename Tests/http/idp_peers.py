"""Real identity-provider peers for the #11 tests, on loopback (fixtures in conftest.py).

* `OIDCIssuer`: an OpenID Connect issuer. It serves `GET /jwks` and
  `GET /.well-known/openid-configuration` and signs ID tokens (PyJWT, RS256) with an RSA-2048
  key it generates itself. It can also forge tokens (a foreign key, `alg: none`, HS256 keyed with
  its own public key), expire them, and rotate keys. For sign-in through a browser it runs the
  authorization-code flow: `GET /authorize` (decided by `approve_as`) and `POST /token`.
* `OAuth1Provider`: Twitter's `GET /1.1/account/verify_credentials.json`. Every request's
  OAuth 1.0a HMAC-SHA1 signature is checked by oauthlib's `ResourceEndpoint` before it answers.
  It also runs Twitter's 3-legged flow: `POST /oauth/request_token`, `GET /oauth/authenticate`
  (decided by `approve_as`) and `POST /oauth/access_token`, checked by oauthlib's
  `RequestTokenEndpoint` and `AccessTokenEndpoint`.
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
from urllib.parse import parse_qs, parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from oauthlib.oauth1 import (SIGNATURE_HMAC_SHA1, AccessTokenEndpoint, Client, RequestTokenEndpoint,
                              RequestValidator, ResourceEndpoint)
from oauthlib.oauth1.rfc5849 import errors as oauth1_errors
from oauthlib.oauth1.rfc5849.utils import escape as oauth1_escape, parse_authorization_header

CLIENT_ID = "herald-test-client.apps.example.com"  # the ID tokens' default `aud`
VERIFY_CREDENTIALS_PATH = "/1.1/account/verify_credentials.json"
TWITTER_CONSUMER_KEY = "hRldTstCnsmrKy0123456789a"  # 25 characters, like Twitter's API keys
REQUEST_TOKEN_PATH = "/oauth/request_token"
AUTHENTICATE_PATH = "/oauth/authenticate"
AUTHORIZE_PATH = "/oauth/authorize"
ACCESS_TOKEN_PATH = "/oauth/access_token"
HTML = "text/html; charset=utf-8"  # Twitter's content type for the form-encoded token answers, too
TEXT = "text/plain; charset=utf-8"


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

    def reply(self, status: int, body: Any, headers: Optional[dict] = None,
              content_type: str = "application/json; charset=utf-8") -> None:
        """Send `body` (bytes as they are, a str UTF-8 encoded, anything else as JSON) with `content_type`."""
        if isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet; the peers keep their own logs
        pass

    def read_body(self) -> Optional[str]:
        """The request body (Content-Length bytes) as text, None when there is none."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8", "replace") if length else None

    def redirect(self, location: str) -> None:
        """302 to `location`, empty text/html body (what the providers' approval pages answer)."""
        self.reply(302, b"", {"Location": location, "Cache-Control": "no-store"}, content_type=HTML)


def with_query(url: str, params: list) -> str:
    """`url` with `params` (a list of (name, value)) appended to its query: `?` or `&` as needed, before any
    fragment."""
    parts = urlsplit(url)
    extra = urlencode(params)
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def _is_web_url(url: Optional[str]) -> bool:
    parts = urlsplit(url or "")
    return parts.scheme in ("http", "https") and bool(parts.netloc)


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
      * `jwks_delay`: seconds /jwks waits before it answers (a provider that hangs); 0 = none.
      * `jwks_max_age`: the `Cache-Control: public, max-age=N` sent with /jwks; None = no header.
    Logs: `requests` is a list of (method, path-with-query); `jwks_requests` counts GET /jwks.

    The authorization-code flow (OIDC Core §3.1, RFC 6749 §4.1), for sign-in through a browser:
      * `GET /authorize?client_id&redirect_uri&response_type=code&scope&state&nonce[&code_challenge…]`
        checks client_id == `client_id`, response_type == "code", "openid" in scope, an http(s)
        redirect_uri and no repeated parameter (else 400 text/plain). It does not render a page: it
        decides at once by `approve_as`, which the test sets to the claims of the approving user
        (a dict: sub, email, email_verified, name, picture, anything else becomes an extra claim; a
        None value deletes that claim) → 302 to redirect_uri with `code` and `state`; or "deny" → 302
        with `error=access_denied` and `state`; None (the default) → 200 text/html, no decision.
        Every query is appended to `authorizations` (dicts); each code to `codes` (code →
        OIDCAuthorizationCode), valid `code_lifetime` (60) s, single use.
      * `POST /token` (form): grant_type=authorization_code, code, redirect_uri (equal to the one at
        /authorize), the client authenticated by client_secret_basic (HTTP Basic of the form-urlencoded
        client_id:client_secret, RFC 6749 §2.3.1) or client_secret_post (client_id and client_secret in
        the form), not both; code_verifier when /authorize had a code_challenge (S256 or plain).
        200 JSON {access_token, token_type: "Bearer", expires_in: 3600, id_token, scope} with the
        approved claims, aud=client_id, iss=issuer and the /authorize nonce. Errors (JSON, RFC 6749
        §5.2): 401 invalid_client, 400 invalid_grant (unknown, used, expired code; redirect_uri or
        code_verifier mismatch), 400 invalid_request, 400 unsupported_grant_type. Each request is
        appended to `token_requests` (OIDCTokenRequest).
    `client_secret` is random unless given.
    """

    code_lifetime = 60

    def __init__(self, client_id: str = CLIENT_ID, client_secret: Optional[str] = None) -> None:
        super().__init__()
        self.client_id = client_id
        self.client_secret = client_secret or secrets.token_urlsafe(24)
        self._keys: list = [_SigningKey(self._new_kid(), new_rsa_key())]
        self.jwks_status: Optional[int] = None
        self.jwks_delay: float = 0
        self.jwks_max_age: Optional[int] = 3600
        self.requests: list = []
        self.approve_as: Union[dict, str, None] = None
        self.authorizations: list = []
        self.codes: dict = {}
        self.token_requests: list = []

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

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.base_url}/authorize"

    @property
    def token_endpoint(self) -> str:
        return f"{self.base_url}/token"

    def authorize_url(self, redirect_uri: str, state: Optional[str] = None, nonce: Optional[str] = None,
                      scope: str = "openid email profile", client_id: Optional[str] = None,
                      response_type: str = "code", **extra: str) -> str:
        """The /authorize URL a correct relying party sends the browser to (`extra`: more parameters)."""
        query: dict = {"client_id": self.client_id if client_id is None else client_id,
                       "redirect_uri": redirect_uri, "response_type": response_type, "scope": scope}
        if state is not None:
            query["state"] = state
        if nonce is not None:
            query["nonce"] = nonce
        query.update(extra)
        return f"{self.authorization_endpoint}?{urlencode(query)}"

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
        if path == "/token":
            if h.command != "POST":
                h.reply(405, {"error": "method not allowed"}, {"Allow": "POST"})
            else:
                self._token(h)
        elif h.command not in ("GET", "HEAD"):
            h.reply(405, {"error": "method not allowed"}, {"Allow": "GET"})
        elif path == "/jwks":
            if self.jwks_delay:
                time.sleep(self.jwks_delay)
            if self.jwks_status is not None:
                h.reply(self.jwks_status, {"error": "jwks unavailable"})
                return
            headers = {} if self.jwks_max_age is None else {"Cache-Control": f"public, max-age={self.jwks_max_age}"}
            h.reply(200, self.jwks(), headers)
        elif path == "/.well-known/openid-configuration":
            h.reply(200, {
                "issuer": self.issuer,
                "jwks_uri": self.jwks_url,
                "authorization_endpoint": self.authorization_endpoint,
                "token_endpoint": self.token_endpoint,
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
                "scopes_supported": ["openid", "email", "profile"],
                "code_challenge_methods_supported": ["S256", "plain"],
                "claims_supported": ["aud", "email", "email_verified", "exp", "iat", "iss", "name", "nonce",
                                     "picture", "sub"],
            })
        elif path == "/authorize":
            self._authorize(h)
        else:
            h.reply(404, {"error": "not found"})

    def _authorize(self, h: _Handler) -> None:
        pairs = parse_qsl(urlsplit(h.path).query, keep_blank_values=True)
        query = dict(pairs)
        with self._lock:
            self.authorizations.append(query)

        def bad(message: str) -> None:  # never redirected: the redirect_uri or client may not be trusted
            h.reply(400, f"400 Bad Request: {message}\n", content_type=TEXT)

        if len(query) != len(pairs):
            return bad("a parameter is repeated")
        if query.get("client_id") != self.client_id:
            return bad(f"unknown client_id {query.get('client_id')!r}")
        redirect_uri = query.get("redirect_uri", "")
        if not _is_web_url(redirect_uri):
            return bad(f"redirect_uri must be an http(s) URL, not {redirect_uri!r}")
        if query.get("response_type") != "code":
            return bad(f"unsupported response_type {query.get('response_type')!r}")
        if "openid" not in query.get("scope", "").split():
            return bad("scope must contain openid")
        challenge = query.get("code_challenge")
        method = query.get("code_challenge_method", "plain" if challenge else None)
        if method is not None and (method not in ("S256", "plain") or not challenge):
            return bad(f"bad code_challenge/code_challenge_method {method!r}")

        state = [("state", query["state"])] if "state" in query else []
        decision = self.approve_as
        if decision == "deny":
            return h.redirect(with_query(redirect_uri, [("error", "access_denied"), *state]))
        if not isinstance(decision, dict):
            return h.reply(200, "<!doctype html><title>Sign in</title><p>No decision: set approve_as.</p>",
                           content_type=HTML)
        grant = OIDCAuthorizationCode(code=secrets.token_urlsafe(32), client_id=self.client_id,
                                      redirect_uri=redirect_uri, scope=query.get("scope", ""),
                                      nonce=query.get("nonce"), claims=dict(decision),
                                      expires_at=time.time() + self.code_lifetime,
                                      code_challenge=challenge, code_challenge_method=method)
        with self._lock:
            self.codes[grant.code] = grant
        h.redirect(with_query(redirect_uri, [("code", grant.code), *state]))

    def _approved_id_token(self, grant: "OIDCAuthorizationCode") -> str:
        """The ID token for an approved code: the approve_as claims (None values delete a claim, as in
        claims()), aud=client_id, iss=issuer, the /authorize nonce when one was given."""
        claims = dict(grant.claims)
        sub = claims.pop("sub", None)
        if sub is None:
            claims["sub"] = None  # approve_as without sub: a token without one
        named: dict = {k: claims.pop(k) for k in ("email", "name", "picture") if claims.get(k) is not None}
        if "email" in named and claims.get("email_verified") is not None:
            named["email_verified"] = bool(claims.pop("email_verified"))
        return self.id_token(sub or "", nonce=grant.nonce, extra=claims, **named)

    def _token(self, h: _Handler) -> None:
        body = h.read_body() or ""
        pairs = parse_qsl(body, keep_blank_values=True)
        form = dict(pairs)
        entry = OIDCTokenRequest(form=form, authorization=h.headers.get("Authorization"),
                                 content_type=h.headers.get("Content-Type"))

        def answer(status: int, payload: dict, headers: Optional[dict] = None) -> None:
            entry.status, entry.error = status, payload.get("error", "")
            with self._lock:
                self.token_requests.append(entry)
            h.reply(status, payload, {"Cache-Control": "no-store", "Pragma": "no-cache", **(headers or {})})

        def error(status: int, code: str, description: str, headers: Optional[dict] = None) -> None:
            answer(status, {"error": code, "error_description": description}, headers)

        if "application/x-www-form-urlencoded" not in (entry.content_type or ""):
            return error(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
        if len(form) != len(pairs):
            return error(400, "invalid_request", "a parameter is repeated")

        # ---- client authentication (RFC 6749 §2.3.1): exactly one method
        basic = (entry.authorization or "").split(None, 1)
        challenge = {"WWW-Authenticate": 'Basic realm="token"'}
        if len(basic) == 2 and basic[0].lower() == "basic":
            entry.auth_method = "client_secret_basic"
            if "client_secret" in form:
                return error(400, "invalid_request", "more than one client authentication method")
            try:
                user, _, password = base64.b64decode(basic[1], validate=True).decode("utf-8").partition(":")
            except ValueError:
                return error(401, "invalid_client", "malformed Basic credentials", challenge)
            client_id, client_secret = unquote_plus(user), unquote_plus(password)
            if "client_id" in form and form["client_id"] != client_id:
                return error(401, "invalid_client", "client_id differs from the Basic credentials", challenge)
        elif "client_secret" in form:
            entry.auth_method = "client_secret_post"
            client_id, client_secret = form.get("client_id", ""), form["client_secret"]
        else:
            entry.auth_method = "none"
            return error(401, "invalid_client", "client authentication is required", challenge)
        entry.client_id = client_id
        if client_id != self.client_id or not hmac.compare_digest(client_secret.encode(),
                                                                  self.client_secret.encode()):
            return error(401, "invalid_client", "client authentication failed",
                         challenge if entry.auth_method == "client_secret_basic" else None)

        # ---- the grant
        if form.get("grant_type") != "authorization_code":
            return error(400, "unsupported_grant_type", f"unsupported grant_type {form.get('grant_type')!r}")
        if not form.get("code"):
            return error(400, "invalid_request", "code is missing")
        with self._lock:  # check and use up the code at once: codes are single use
            grant = self.codes.get(form["code"])
            refusal = self._grant_refusal(grant, client_id, form)
            if refusal is None:
                grant.used = True
        if refusal is not None:
            return error(400, "invalid_grant", refusal)
        answer(200, {"access_token": secrets.token_urlsafe(32), "token_type": "Bearer", "expires_in": 3600,
                     "id_token": self._approved_id_token(grant), "scope": grant.scope})


    @staticmethod
    def _grant_refusal(grant: Optional["OIDCAuthorizationCode"], client_id: str, form: dict) -> Optional[str]:
        """Why /token refuses `grant` (an invalid_grant description), None when it may be redeemed."""
        if grant is None or grant.used:
            return "unknown or used code"
        if time.time() > grant.expires_at:
            return "the code has expired"
        if grant.client_id != client_id:
            return "the code was issued to another client"
        if form.get("redirect_uri") != grant.redirect_uri:
            return "redirect_uri differs from the one at /authorize"
        if grant.code_challenge is not None:
            verifier = form.get("code_verifier", "")
            expected = (_b64url(hashlib.sha256(verifier.encode("ascii", "replace")).digest())
                        if grant.code_challenge_method == "S256" else verifier)
            if not verifier or not hmac.compare_digest(expected, grant.code_challenge):
                return "code_verifier does not match the code_challenge"
        return None


@dataclass
class OIDCAuthorizationCode:
    """A code /authorize issued: what /token checks, and the approved claims its ID token carries."""
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    nonce: Optional[str]
    claims: dict
    expires_at: float
    code_challenge: Optional[str] = None
    code_challenge_method: Optional[str] = None
    used: bool = False


@dataclass
class OIDCTokenRequest:
    """One POST /token. `auth_method` is client_secret_basic, client_secret_post or none; `error` the
    OAuth error code answered ("" on success)."""
    form: dict
    authorization: Optional[str]
    content_type: Optional[str]
    auth_method: str = ""
    client_id: str = ""
    status: int = 0
    error: str = ""


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
    error_description: str = ""  # why oauthlib refused it, when it said (e.g. "Missing callback URI.")


@dataclass
class TwitterRequestToken:
    """A request token /oauth/request_token issued. `account` is the approving user and `verifier`
    the oauth_verifier once /oauth/authenticate approved; `denied` after a denial; `used` once
    exchanged at /oauth/access_token. Tests may move `expires_at` into the past."""
    token: str
    secret: str
    callback: str
    consumer_key: str
    expires_at: float
    verifier: Optional[str] = None
    account: Optional[TwitterAccount] = None
    denied: bool = False
    used: bool = False

    @property
    def state(self) -> str:
        """"used", "expired", "denied", "approved" or "pending"."""
        if self.used:
            return "used"
        if time.time() > self.expires_at:
            return "expired"
        return "denied" if self.denied else "approved" if self.verifier else "pending"


_TWITTER_ERRORS = {
    32: "Could not authenticate you.",
    34: "Sorry, that page does not exist.",
    89: "Invalid or expired token.",
    131: "Internal error.",
    135: "Timestamp out of bounds.",
    215: "Bad Authentication data.",
    415: "Callback URL not approved for this client application. Approved callback URLs can be adjusted in "
         "your application settings",
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

    # ---- 3-legged flow (RequestTokenEndpoint, AccessTokenEndpoint)
    dummy_request_token = "dummy-request-token"

    def check_request_token(self, request_token):
        return self._any(request_token)

    def check_verifier(self, verifier):
        return self._any(verifier)

    def check_realms(self, realms):
        return True

    def get_default_realms(self, client_key, request):
        return []

    def get_realms(self, token, request):
        return []

    def validate_requested_realms(self, client_key, realms, request):
        return True

    def validate_redirect_uri(self, client_key, redirect_uri, request):
        return _is_web_url(redirect_uri)  # any http(s) callback; it is kept with the request token

    def save_request_token(self, token, request):
        state = TwitterRequestToken(token=token["oauth_token"], secret=token["oauth_token_secret"],
                                    callback=request.redirect_uri, consumer_key=request.client_key,
                                    expires_at=time.time() + self.provider.request_token_lifetime)
        with self.provider._lock:
            self.provider.request_tokens[state.token] = state

    def validate_request_token(self, client_key, token, request):
        state = self.provider.request_tokens.get(token)
        return state is not None and state.consumer_key == client_key and state.state in ("pending", "approved")

    def get_request_token_secret(self, client_key, token, request):
        state = self.provider.request_tokens.get(token)
        return state.secret if state else "dummy-request-token-secret"

    def validate_verifier(self, client_key, token, verifier, request):
        state = self.provider.request_tokens.get(token)
        return bool(state and state.verifier and state.account
                    and hmac.compare_digest(state.verifier.encode(), verifier.encode()))

    def invalidate_request_token(self, client_key, request_token, request):
        state = self.provider.request_tokens.get(request_token)
        if state:
            state.used = True

    def save_access_token(self, token, request):
        pass  # the access token is the approving account's (add_user)


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

    The 3-legged flow ("Sign in with Twitter", RFC 5849 §2), under the same base URL:
      * `POST /oauth/request_token`: signed with the consumer only (a non-empty oauth_token → 401
        code 32), `oauth_callback` among the protocol parameters; checked by oauthlib's
        RequestTokenEndpoint. 200 `text/html; charset=utf-8`, body
        `oauth_token=T&oauth_token_secret=S&oauth_callback_confirmed=true`; T lives
        `request_token_lifetime` (600) s, in `request_tokens` (T → TwitterRequestToken). No callback →
        400 code 215 (oauthlib's InvalidRequestError; `error_description` says why); a callback that is
        not an http(s) URL → 403 code 415; a bad signature or consumer → 401 code 32.
      * `GET /oauth/authenticate?oauth_token=T[&force_login&screen_name&lang…]` (or /oauth/authorize):
        the approval page. It decides at once by `approve_as`: a TwitterAccount (from add_user) → 302
        to T's callback + `oauth_token=T&oauth_verifier=V`; "deny" → 302 to the callback + `denied=T`;
        None (the default) → 200 text/html, no decision. A token that is unknown, expired, already
        decided or used → 401 code 89. Every query is appended to `authorizations` (dicts).
      * `POST /oauth/access_token`: signed with the consumer and T/S, `oauth_verifier=V` in the
        Authorization header (or in the form body or query beside an Authorization header: it is moved
        into the header's parameters, which leaves the signature base string as it was); checked by
        oauthlib's AccessTokenEndpoint. 200 `text/html; charset=utf-8`, body
        `oauth_token=…&oauth_token_secret=…&user_id=…&screen_name=…`: the approving account's access
        token and secret, so verify_credentials works with them. T is single use: unknown, used,
        expired or denied → 401 code 89; wrong verifier or signature → 401 code 32; no verifier → 400
        code 215.
    Token endpoints answer other methods with 404 code 34, like other paths; a stale timestamp with
    401 code 135 everywhere.
    """

    request_token_lifetime = 600

    def __init__(self, consumer_key: str = TWITTER_CONSUMER_KEY, consumer_secret: Optional[str] = None) -> None:
        super().__init__()
        self.consumer_key = consumer_key
        self.consumer_secret = consumer_secret or secrets.token_urlsafe(37)[:50]
        self.accounts: dict = {}
        self.requests: list = []
        self.outage: Optional[int] = None
        self.request_tokens: dict = {}
        self.authorizations: list = []
        self.approve_as: Union[TwitterAccount, str, None] = None
        validator = _TwitterValidator(self)
        self._endpoint = ResourceEndpoint(validator)
        # Twitter's request tokens and secrets: 32 characters of [A-Za-z0-9_-]
        self._request_token_endpoint = RequestTokenEndpoint(validator,
                                                            token_generator=lambda: secrets.token_urlsafe(24))
        self._access_token_endpoint = AccessTokenEndpoint(validator)

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

    @property
    def request_token_url(self) -> str:
        return f"{self.base_url}{REQUEST_TOKEN_PATH}"

    @property
    def access_token_url(self) -> str:
        return f"{self.base_url}{ACCESS_TOKEN_PATH}"

    def authenticate_url(self, token: str, path: str = AUTHENTICATE_PATH, **extra: str) -> str:
        """Where a client sends the browser for request token `token` (`extra`: e.g. force_login="true")."""
        return f"{self.base_url}{path}?{urlencode({'oauth_token': token, **extra})}"

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
        body = h.read_body()
        entry = OAuth1Request(method=h.command, path=parts.path, query=parse_qs(parts.query, keep_blank_values=True),
                              authorization=h.headers.get("Authorization"), verified=False)

        if self.outage is not None:
            return self._error(h, entry, self.outage, 131)
        if parts.path == VERIFY_CREDENTIALS_PATH:
            return self._verify_credentials(h, entry, uri, headers, body)
        if parts.path == REQUEST_TOKEN_PATH and h.command == "POST":
            return self._request_token(h, entry, uri, headers, body)
        if parts.path in (AUTHENTICATE_PATH, AUTHORIZE_PATH) and h.command in ("GET", "HEAD"):
            return self._authenticate(h, entry, parts.query)
        if parts.path == ACCESS_TOKEN_PATH and h.command == "POST":
            return self._access_token(h, entry, uri, headers, body)
        return self._error(h, entry, 404, 34)

    def _answer(self, h: _Handler, entry: OAuth1Request, status: int, payload: Any, code: int = 0,
                headers: Optional[dict] = None, content_type: str = "application/json; charset=utf-8") -> None:
        entry.status, entry.error_code = status, code
        with self._lock:
            self.requests.append(entry)
        h.reply(status, payload, headers, content_type=content_type)

    def _error(self, h: _Handler, entry: OAuth1Request, status: int, code: int) -> None:
        self._answer(h, entry, status, {"errors": [{"code": code, "message": _TWITTER_ERRORS[code]}]}, code)

    @staticmethod
    def _refusal(entry: OAuth1Request) -> Optional[tuple]:
        """(status, code) for a request refused before its signature counts: 400 215 without the mandatory
        protocol parameters, 401 135 for a timestamp outside the window; None otherwise."""
        params = entry.oauth_params
        if not params or not all(params.get(p) for p in ("oauth_consumer_key", "oauth_signature", "oauth_nonce",
                                                          "oauth_timestamp", "oauth_signature_method")):
            return 400, 215
        try:
            skew = abs(time.time() - int(params["oauth_timestamp"]))
        except ValueError:
            skew = float("inf")
        if skew > _TwitterValidator.timestamp_lifetime:
            return 401, 135
        return None

    def _verify_credentials(self, h: _Handler, entry: OAuth1Request, uri: str, headers: dict,
                            body: Optional[str]) -> None:
        try:
            verified, request = self._endpoint.validate_protected_resource_request(
                uri, http_method=h.command, body=body, headers=headers)
        except Exception:  # oauthlib raises on some malformed input (e.g. a broken header)
            verified, request = False, None
        if request is not None:
            entry.oauth_params = dict(getattr(request, "oauth_params", {}) or {})
        entry.verified = bool(verified)

        if h.command != "GET":  # Twitter: verify_credentials is GET only
            return self._error(h, entry, 404, 34)
        if verified:
            account = self.accounts[request.resource_owner_key]
            include = (entry.query.get("include_email") or [""])[-1].lower() in ("true", "t", "1")
            return self._answer(h, entry, 200, account.user(include_email=include))

        refusal = self._refusal(entry)
        if refusal is not None:
            return self._error(h, entry, *refusal)
        log = getattr(request, "validator_log", {}) or {}
        if log and log.get("client") and not log.get("resource_owner"):
            return self._error(h, entry, 401, 89)
        return self._error(h, entry, 401, 32)

    def _parse(self, endpoint: Any, h: _Handler, entry: OAuth1Request, uri: str, headers: dict,
               body: Optional[str]) -> Any:
        """oauthlib's Request for a token request, its protocol parameters logged; None when malformed."""
        try:
            request = endpoint._create_request(uri, h.command, body, headers)
        except (oauth1_errors.OAuth1Error, ValueError) as e:
            entry.error_description = getattr(e, "description", str(e))
            return None
        entry.oauth_params = dict(request.oauth_params)
        return request

    def _request_token(self, h: _Handler, entry: OAuth1Request, uri: str, headers: dict,
                       body: Optional[str]) -> None:
        endpoint = self._request_token_endpoint
        request = self._parse(endpoint, h, entry, uri, headers, body)
        if request is None:
            return self._error(h, entry, 400, 215)
        if request.resource_owner_key:
            entry.error_description = "oauth_token must not be sent with a request token request"
            return self._error(h, entry, 401, 32)
        try:
            valid, request = endpoint.validate_request_token_request(request)
        except oauth1_errors.OAuth1Error as e:  # e.g. "Missing callback URI.", a stale timestamp
            entry.error_description = e.description
            return self._error(h, entry, *(self._refusal(entry) or (e.status_code, 215)))
        entry.verified = bool(valid)
        if not valid:
            log = request.validator_log
            if log.get("client") and log.get("signature") and not log.get("callback"):
                entry.error_description = f"callback {request.redirect_uri!r} is not an http(s) URL"
                return self._error(h, entry, 403, 415)
            return self._error(h, entry, 401, 32)
        form = endpoint.create_request_token(request, {})  # oauth_token, oauth_token_secret, oauth_callback_confirmed
        self._answer(h, entry, 200, form, content_type=HTML)

    def _authenticate(self, h: _Handler, entry: OAuth1Request, query_string: str) -> None:
        query = dict(parse_qsl(query_string, keep_blank_values=True))
        with self._lock:
            self.authorizations.append(query)
            state = self.request_tokens.get(query.get("oauth_token", ""))
            decision = self.approve_as
            if state is None or state.state != "pending":
                state = None
            elif decision == "deny":
                state.denied = True
            elif isinstance(decision, TwitterAccount):
                state.account, state.verifier = decision, secrets.token_urlsafe(24)
        if state is None:
            return self._error(h, entry, 401, 89)
        if state.denied:
            location = with_query(state.callback, [("denied", state.token)])
        elif state.verifier:
            location = with_query(state.callback, [("oauth_token", state.token), ("oauth_verifier", state.verifier)])
        else:
            return self._answer(h, entry, 200, "<!doctype html><title>Authorize app</title>"
                                "<p>No decision: set approve_as.</p>", content_type=HTML)
        self._answer(h, entry, 302, b"", headers={"Location": location, "Cache-Control": "no-store"},
                     content_type=HTML)

    @staticmethod
    def _verifier_into_header(uri: str, headers: dict, body: Optional[str]) -> tuple:
        """Twitter takes oauth_verifier from the form body or the query beside an OAuth Authorization header;
        oauthlib wants protocol parameters from one place. Moving it into the header leaves the signature base
        string unchanged (it is built from all parameters wherever they are). Returns (uri, headers, body)."""
        auth_key = next((k for k in headers if k.lower() == "authorization"), None)
        auth = headers.get(auth_key, "") if auth_key else ""
        if not auth.lower().startswith("oauth "):
            return uri, headers, body
        try:
            if any(k == "oauth_verifier" for k, _ in parse_authorization_header(auth)):
                return uri, headers, body
        except ValueError:
            return uri, headers, body
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        if body and "application/x-www-form-urlencoded" in content_type:
            pairs = parse_qsl(body, keep_blank_values=True)
            found = [v for k, v in pairs if k == "oauth_verifier"]
            if len(found) == 1:
                body = urlencode([(k, v) for k, v in pairs if k != "oauth_verifier"])
                return uri, {**headers, auth_key: f'{auth}, oauth_verifier="{oauth1_escape(found[0])}"'}, body
        parts = urlsplit(uri)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        found = [v for k, v in pairs if k == "oauth_verifier"]
        if len(found) == 1:
            query = urlencode([(k, v) for k, v in pairs if k != "oauth_verifier"])
            uri = urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
            return uri, {**headers, auth_key: f'{auth}, oauth_verifier="{oauth1_escape(found[0])}"'}, body
        return uri, headers, body

    def _access_token(self, h: _Handler, entry: OAuth1Request, uri: str, headers: dict,
                      body: Optional[str]) -> None:
        endpoint = self._access_token_endpoint
        uri, headers, body = self._verifier_into_header(uri, headers, body)
        request = self._parse(endpoint, h, entry, uri, headers, body)
        if request is None:
            return self._error(h, entry, 400, 215)
        with self._lock:  # validate and use up the request token at once: a second exchange must fail
            try:
                valid, request = endpoint.validate_access_token_request(request)
            except oauth1_errors.OAuth1Error as e:  # no oauth_token or verifier, a stale timestamp
                entry.error_description, status = e.description, e.status_code
                valid = None
            if valid:
                state = self.request_tokens[request.resource_owner_key]
                state.used = True
        if valid is None:
            return self._error(h, entry, *(self._refusal(entry) or (status, 215)))
        entry.verified = bool(valid)
        if not valid:
            log = request.validator_log
            if log.get("client") and not log.get("resource_owner"):
                return self._error(h, entry, 401, 89)
            if log.get("client") and log.get("signature") and not log.get("verifier"):
                entry.error_description = "wrong oauth_verifier"
            return self._error(h, entry, 401, 32)
        account = state.account
        form = urlencode([("oauth_token", account.token), ("oauth_token_secret", account.secret),
                          ("user_id", account.id_str), ("screen_name", account.screen_name)])
        self._answer(h, entry, 200, form, content_type=HTML)


def client_header(url: str, consumer_key: str, consumer_secret: str, token: str, token_secret: str, *,
                  method: str = "GET", timestamp: Optional[str] = None, nonce: Optional[str] = None) -> str:
    """The OAuth 1.0a HMAC-SHA1 `Authorization` header for `method url` (its query is signed too),
    made by oauthlib.oauth1.Client. timestamp/nonce fix those values (for stale-timestamp tests)."""
    client = Client(consumer_key, client_secret=consumer_secret, resource_owner_key=token,
                    resource_owner_secret=token_secret, signature_method=SIGNATURE_HMAC_SHA1,
                    timestamp=timestamp, nonce=nonce)
    _, headers, _ = client.sign(url, http_method=method)
    return headers["Authorization"]

"""The hosted sign-in handler (issue #11, the seed's `OAuthProvider(providerID: "twitter.com").getCredentialWith`):
the Apple SDK opens `/emulator/auth/handler` (under `useEmulator`) with its session id's SHA-256 and callback
scheme; Herald sends the browser to the provider, finishes the exchange when it returns, and hands the app a link
that `verifyAssertion` accepts only with the app's raw session id.

The browser is a `requests.Session` following redirects by hand; the app's side (reading `deep_link_id`, then
`verifyAssertion` on the v3 path with `requestUri=<link>`, `sessionId`, `postBody=providerId=…`) is done as the
iOS SDK does it (OAuthProvider.swift, AuthWebUtils.swift). The providers are the real protocol peers of
idp_peers.py: Twitter's three-legged OAuth 1.0a checked by oauthlib, an OIDC issuer's authorization-code flow."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import jwt
import requests

from helpers import action_link
from http_support import API_KEY, assert_error, code_of, ok, unique_email

CLIENT_ID = "123456-seedapp.apps.googleusercontent.com"
SCHEME = "com.googleusercontent.apps.123456-seedapp"  # the reversed client id, as the SDK registers it
V3 = "/www.googleapis.com/identitytoolkit/v3/relyingparty/"


def b64url_decode(text: str) -> str:
    """Unpadded base64url, decoded as Latin-1 text (any bytes), to look for plaintext inside."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("latin-1")


class App:
    """The iOS SDK's side of the flow: a random session id, the handler URL it opens, the callback it reads."""

    def __init__(self, srv, provider_id: str, *, path: str = "/emulator/auth/handler", **extra: str) -> None:
        self.srv, self.provider_id = srv, provider_id
        self.session_id = secrets.token_urlsafe(8)[:10]
        self.event_id = secrets.token_urlsafe(8)[:10]
        params = {"apiKey": API_KEY, "authType": "signInWithRedirect", "ibi": "com.example.seed",
                  "sessionId": hashlib.sha256(self.session_id.encode()).hexdigest(), "v": "ios/11.0.0",
                  "eventId": self.event_id, "providerId": provider_id, "clientId": CLIENT_ID, **extra}
        self.handler_url = srv.url + path + "?" + urlencode(params, quote_via=quote)  # spaces as %20, "+" as %2B, as URLComponents

    def read_callback(self, location: str) -> dict:
        """The deep link's inner query, checked as AuthWebUtils.isExpectedCallbackURL checks it."""
        parts = urlsplit(location)
        assert (parts.scheme, parts.netloc, parts.path) == (SCHEME, "firebaseauth", "/link"), location
        inner = urlsplit(parse_qs(parts.query)["deep_link_id"][0])
        fields = {k: v[0] for k, v in parse_qs(inner.query).items()}
        assert fields["authType"] == "signInWithRedirect" and fields["eventId"] == self.event_id, fields
        return fields

    def read_error(self, location: str) -> dict:
        """The firebaseError the app received at `location`."""
        return json.loads(self.read_callback(location)["firebaseError"])

    def verify_assertion(self, link: str, session_id: str | None = "", **extra) -> requests.Response:
        body = {"requestUri": link, "postBody": f"providerId={self.provider_id}", "returnSecureToken": True,
                "returnIdpCredential": True, **extra}
        if session_id is not None:
            body["sessionId"] = session_id or self.session_id
        return self.srv.post("verifyAssertion", body, prefix=V3)


def browse(session: requests.Session, url: str, limit: int = 6) -> requests.Response:
    """Follows http(s) redirects as a browser would; stops at the first answer that is not one (e.g. the app's scheme)."""
    response = session.get(url, allow_redirects=False, timeout=10)
    for _ in range(limit):
        location = response.headers.get("Location")
        if response.status_code not in (301, 302, 303, 307) or not location or not location.startswith("http"):
            return response
        response = session.get(location, allow_redirects=False, timeout=10)
    raise AssertionError("too many redirects")


def twitter_server(server, provider, *, settings: dict | None = None, **providers):
    """A server with Twitter enabled, returning to SCHEME; `providers` adds to (or replaces) the providers section,
    `settings` are other config sections (e.g. {"limits": {...}})."""
    return server(providers={"twitter": provider.herald_provider(), "appCallbacks": [SCHEME], **providers}, **(settings or {}))


def oidc_server(server, issuer, *, client_secret: str | None = None):
    """A server with the OIDC issuer as oidc.acme, its web flow on (with `client_secret`, by default the right one),
    returning to SCHEME."""
    provider = {**issuer.herald_provider(), "authorizationUrl": issuer.base_url + "/authorize",
                "tokenUrl": issuer.base_url + "/token",
                "clientSecret": issuer.client_secret if client_secret is None else client_secret}
    return server(providers={"oidc": {"acme": provider}, "appCallbacks": [SCHEME]})


def twitter_sign_in(srv, provider, account) -> tuple[App, str]:
    """One approved flow: returns the app and the link it received."""
    app = App(srv, "twitter.com")
    provider.approve_as = account
    answer = browse(requests.Session(), app.handler_url)
    assert answer.status_code == 302, answer.text
    return app, app.read_callback(answer.headers["Location"])["link"]


def test_the_seeds_twitter_web_flow_signs_in_through_the_handler(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider)
    email = unique_email("handler-tw")
    account = oauth1_provider.add_user(name="Seed User", screen_name="seeduser", email=email)
    app = App(srv, "twitter.com", customParameters=json.dumps({"lang": "de", "client_id": "not-passed"}))
    oauth1_provider.approve_as = account
    browser = requests.Session()

    first = browser.get(app.handler_url, allow_redirects=False, timeout=10)
    assert first.status_code == 302, first.text
    assert first.headers["Location"].startswith(oauth1_provider.base_url + "/oauth/authenticate?")
    cookie = first.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/emulator/auth/handler" in cookie
    # Sealed, not merely encoded: neither the request token nor its secret is in the cookie, decoded or not.
    (request_token, state), = oauth1_provider.request_tokens.items()
    sealed_cookie = cookie.split(";")[0].split("=", 1)[1]
    for text in (sealed_cookie, b64url_decode(sealed_cookie)):
        assert request_token not in text and state.secret not in text, text
    assert state.callback == srv.url + "/emulator/auth/handler"
    answer = browse(browser, first.headers["Location"])
    assert answer.status_code == 302, answer.text
    link = app.read_callback(answer.headers["Location"])["link"]
    sealed_link = parse_qs(urlsplit(link).query)["heraldAssertion"][0]
    for text in (link, b64url_decode(sealed_link)):  # sealed for the app
        assert account.token not in text and account.secret not in text, text
    assert "Max-Age=0" in answer.headers["Set-Cookie"]  # the pending flow is over

    # The provider saw a signed request token with Herald's handler as callback, the approval with the
    # app's lang (but not a reserved parameter), and a signed access-token exchange.
    seen = [(r.path, r.status, r.verified) for r in oauth1_provider.requests]
    assert seen == [("/oauth/request_token", 200, True), ("/oauth/authenticate", 302, False),  # the browser's, unsigned
                    ("/oauth/access_token", 200, True)], seen
    assert oauth1_provider.authorizations == [{"oauth_token": request_token, "lang": "de"}], oauth1_provider.authorizations

    body = ok(app.verify_assertion(link))
    assert body["providerId"] == "twitter.com" and body["isNewUser"] is True and body["federatedId"] == account.id_str
    assert body["email"] == email and body["screenName"] == "seeduser" and body["displayName"] == "Seed User"
    # The seed reads credential.accessToken and .secret from the result.
    assert body["oauthAccessToken"] == account.token and body["oauthTokenSecret"] == account.secret
    claims = jwt.decode(body["idToken"], options={"verify_signature": False})
    assert claims["firebase"]["sign_in_provider"] == "twitter.com"

    # A second flow reaches the same account.
    second_app, second_link = twitter_sign_in(srv, oauth1_provider, account)
    second = ok(second_app.verify_assertion(second_link))
    assert second["localId"] == body["localId"] and "isNewUser" not in second


def test_the_link_opens_only_with_the_apps_session_id(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider)
    account = oauth1_provider.add_user(email=unique_email("handler-session"))
    app, link = twitter_sign_in(srv, oauth1_provider, account)
    assert_error(app.verify_assertion(link, session_id="someone-elses"), "INVALID_IDP_RESPONSE")
    assert_error(app.verify_assertion(link, session_id=None), "INVALID_IDP_RESPONSE")
    # Tampered with, or presented for another provider: refused.
    sealed = parse_qs(urlsplit(link).query)["heraldAssertion"][0]
    tampered = link.replace(sealed, sealed[:-4] + ("AAAA" if not sealed.endswith("AAAA") else "BBBB"))
    assert_error(app.verify_assertion(tampered), "INVALID_IDP_RESPONSE")
    other = App(srv, "oidc.acme")
    other.session_id = app.session_id
    assert_error(other.verify_assertion(link.replace("providerId=twitter.com", "providerId=oidc.acme")),
                 "INVALID_IDP_RESPONSE")
    # The right session still works.
    assert ok(app.verify_assertion(link))["federatedId"] == account.id_str


def test_denial_and_outages_go_back_to_the_app_as_firebase_errors(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider)
    app = App(srv, "twitter.com")
    oauth1_provider.approve_as = "deny"
    answer = browse(requests.Session(), app.handler_url)
    error = app.read_error(answer.headers["Location"])
    assert error["code"] == "auth/web-context-cancelled", error

    oauth1_provider.outage = 503
    app = App(srv, "twitter.com")
    answer = requests.get(app.handler_url, allow_redirects=False, timeout=10)
    error = app.read_error(answer.headers["Location"])
    assert error["code"] == "auth/network-request-failed", error
    oauth1_provider.outage = None

    # A provider the config does not enable.
    app = App(srv, "oidc.nobody")
    answer = requests.get(app.handler_url, allow_redirects=False, timeout=10)
    error = app.read_error(answer.headers["Location"])
    assert error["code"] == "auth/operation-not-allowed", error


def test_requests_with_no_app_to_return_to_get_a_page(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider)
    good = App(srv, "twitter.com")

    def page(url: str, *, cookies: dict | None = None) -> requests.Response:
        response = requests.get(url, allow_redirects=False, timeout=10, cookies=cookies)
        assert response.status_code == 400 and response.headers["Content-Type"].startswith("text/html"), response.text
        assert "Location" not in response.headers
        return response

    page(good.handler_url.replace(f"apiKey={API_KEY}", "apiKey=wrong"))
    page(good.handler_url.replace("&ibi=com.example.seed", "").replace(f"&clientId={quote(CLIENT_ID)}", ""))
    assert "providers.appCallbacks" in page(good.handler_url.replace("123456-seedapp", "999-other")).text
    page(good.handler_url.replace(f"&clientId={quote(CLIENT_ID)}", "").replace("ibi=com.example.seed", "ibi=javascript"))
    # Twitter's return without the pending flow's cookie (another browser, or a forged one).
    back = srv.url + "/emulator/auth/handler?oauth_token=abc&oauth_verifier=def"
    page(back)
    page(back, cookies={"herald_sign_in": "forged"})
    assert oauth1_provider.requests == []  # none of these reached Twitter


def test_android_apps_get_the_intent_link(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider, appCallbacks=["com.example.seed"])
    account = oauth1_provider.add_user(email=unique_email("handler-android"))
    oauth1_provider.approve_as = account
    session_id = "Andr0idSession+Id"  # the Android SDK sends the handler the same value it presents later
    params = {"apiKey": API_KEY, "authType": "signInWithRedirect", "apn": "com.example.seed", "eventId": "e1",
              "sessionId": session_id, "providerId": "twitter.com"}
    answer = browse(requests.Session(), srv.url + "/__/auth/handler?" + urlencode(params, quote_via=quote))
    location = answer.headers["Location"]
    assert location.startswith("intent://firebase.auth/#Intent;scheme=genericidp;package=com.example.seed;"), location
    fields = dict(part.split("=", 1) for part in location.split(";") if "=" in part and part.startswith(("S.", "B.")))
    link = requests.utils.unquote(fields["S.link"])
    assert fields["S.eventId"] == "e1" and fields["S.authType"] == "signInWithRedirect"
    body = ok(srv.post("accounts:signInWithIdp", {"requestUri": link, "sessionId": session_id,
                                                  "postBody": "providerId=twitter.com", "returnSecureToken": True}))
    assert body["federatedId"] == account.id_str
    # Its hash is not the session id: refused.
    assert_error(srv.post("accounts:signInWithIdp", {"requestUri": link, "postBody": "providerId=twitter.com",
                                                     "sessionId": hashlib.sha256(session_id.encode()).hexdigest()}),
                 "INVALID_IDP_RESPONSE")


def test_an_oidc_provider_signs_in_with_the_authorization_code_flow(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    email = unique_email("handler-oidc")
    oidc_issuer.approve_as = {"sub": "oidc-user-1", "email": email, "email_verified": True, "name": "Grace"}
    app = App(srv, "oidc.acme", scopes="calendar.read")
    answer = browse(requests.Session(), app.handler_url)
    assert answer.status_code == 302, answer.text
    link = app.read_callback(answer.headers["Location"])["link"]
    authorization = oidc_issuer.authorizations[-1]
    assert authorization["scope"].split() == ["openid", "email", "profile", "calendar.read"], authorization
    body = ok(app.verify_assertion(link))
    assert body["providerId"] == "oidc.acme" and body["federatedId"] == "oidc-user-1" and body["email"] == email
    assert body["isNewUser"] is True and body["oauthIdToken"]
    # Bound to this flow: the ID token carries the nonce Herald sent to /authorize.
    assert jwt.decode(body["oauthIdToken"], options={"verify_signature": False})["nonce"] == authorization["nonce"]

    # PKCE: the token request carried the verifier of the challenge sent to /authorize.
    assert authorization.get("code_challenge_method") == "S256", authorization
    verifier = oidc_issuer.token_requests[-1].form["code_verifier"]
    assert base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode() == authorization["code_challenge"]
    # A callback whose state is not the flow's is refused with a page, not sent on to the app.
    browser = requests.Session()
    first = browser.get(App(srv, "oidc.acme").handler_url, allow_redirects=False, timeout=10)
    state = parse_qs(urlsplit(first.headers["Location"]).query)["state"][0]
    wrong = browser.get(srv.url + f"/emulator/auth/handler?code=x&state={state}x", allow_redirects=False, timeout=10)
    assert wrong.status_code == 400


def test_a_wrong_client_secret_goes_back_to_the_app_as_an_error(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer, client_secret="not-the-secret")
    oidc_issuer.approve_as = {"sub": "oidc-user-2", "email": unique_email("handler-secret"), "email_verified": True}
    app = App(srv, "oidc.acme")
    answer = browse(requests.Session(), app.handler_url)
    error = app.read_error(answer.headers["Location"])
    assert error["code"] == "auth/internal-error" and "INVALID_IDP_RESPONSE" in error["message"], error
    assert error["message"].endswith("refused the code (HTTP 401)"), error
    refused = [(t.auth_method, t.status, t.error) for t in oidc_issuer.token_requests]
    assert refused == [("client_secret_post", 401, "invalid_client")], refused


def test_emulator_mode_shows_a_chooser_and_returns_the_emulators_assertion(server):
    srv = server(server={"emulatorMode": True})
    app = App(srv, "twitter.com")
    chooser = requests.get(app.handler_url, timeout=10)
    assert chooser.status_code == 200 and "Sign in with twitter.com" in chooser.text
    email = unique_email("handler-emu")
    chosen = app.handler_url + "&" + urlencode({"sub": "emu-1", "email": email, "name": "Emu", "screen_name": "emu"})
    answer = requests.get(chosen, allow_redirects=False, timeout=10)
    link = app.read_callback(answer.headers["Location"])["link"]
    assert json.loads(parse_qs(urlsplit(link).query)["id_token"][0])["sub"] == "emu-1"
    body = ok(app.verify_assertion(link))
    assert body["federatedId"] == "emu-1" and body["email"] == email and body["isNewUser"] is True
    # The next chooser lists that account.
    again = requests.get(App(srv, "twitter.com").handler_url, timeout=10)
    assert "emu-1" in again.text and email in again.text


def test_an_oidc_refusal_returns_to_the_app_as_cancelled(server, oidc_issuer):
    srv = oidc_server(server, oidc_issuer)
    oidc_issuer.approve_as = "deny"
    app = App(srv, "oidc.acme")
    answer = browse(requests.Session(), app.handler_url)
    error = app.read_error(answer.headers["Location"])
    assert error["code"] == "auth/web-context-cancelled", error
    assert oidc_issuer.token_requests == []


def test_a_twitter_return_for_another_request_token_is_refused(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider)
    oauth1_provider.approve_as = oauth1_provider.add_user(email=unique_email("handler-swap"))
    browser = requests.Session()
    first = browser.get(App(srv, "twitter.com").handler_url, allow_redirects=False, timeout=10)
    approval = browser.get(first.headers["Location"], allow_redirects=False, timeout=10)
    swapped = approval.headers["Location"].replace("oauth_token=", "oauth_token=x")
    answer = browser.get(swapped, allow_redirects=False, timeout=10)
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert "/oauth/access_token" not in [r.path for r in oauth1_provider.requests]


def test_the_handler_url_is_configured_or_loopback(server, oauth1_provider):
    public = "https://auth.example.test/emulator/auth/handler"
    srv = twitter_server(server, oauth1_provider, handlerUrl=public)
    first = requests.get(App(srv, "twitter.com").handler_url, allow_redirects=False, timeout=10)
    assert first.status_code == 302, first.text
    cookie = first.headers["Set-Cookie"]
    assert "; Secure" in cookie and "Path=/emulator/auth/handler" in cookie, cookie
    (_, state), = oauth1_provider.request_tokens.items()
    assert state.callback == public  # what the operator registered with Twitter, not the Host header

    # Without providers.handlerUrl, a Host header that is not loopback gets a page, and Twitter is not asked.
    plain = twitter_server(server, oauth1_provider)
    before = len(oauth1_provider.requests)
    forged = requests.get(App(plain, "twitter.com").handler_url, headers={"Host": "evil.example"}, allow_redirects=False,
                          timeout=10)
    assert forged.status_code == 400 and "providers.handlerUrl" in forged.text
    assert len(oauth1_provider.requests) == before


def test_starts_count_against_the_clients_send_limit(server, oauth1_provider):
    srv = twitter_server(server, oauth1_provider, settings={"limits": {"ipBurst": 2, "ipSendsPerMinute": 2}})
    codes = []
    for _ in range(3):
        app = App(srv, "twitter.com")
        answer = requests.get(app.handler_url, allow_redirects=False, timeout=10)
        location = answer.headers["Location"]
        if location.startswith(SCHEME):
            codes.append(app.read_error(location)["code"])
        else:
            assert location.startswith(oauth1_provider.base_url + "/oauth/authenticate?"), location
            codes.append("ok")
    assert codes == ["ok", "ok", "auth/too-many-requests"], codes
    assert len([r for r in oauth1_provider.requests if r.path == "/oauth/request_token"]) == 2


def test_the_seeds_journey_from_an_email_link_account_to_a_linked_twitter(server, oauth1_provider):
    """The guide's account-exists-with-different-credential path, end to end: the user signed up with an email
    link; Twitter (through the handler) finds that email → needConfirmation with the pending credential;
    fetchSignInMethods says emailLink; the user signs in with a new email link from the inbox and links the
    pending credential; from then on Twitter and email links reach the same localId."""
    srv = twitter_server(server, oauth1_provider, settings={"server": {"enumerationProtection": False}, "policy": {"cooldown": "0s"}})
    email = unique_email("handler-seed")

    def email_link_sign_in(**extra) -> dict:
        before = srv.mail_count(email)
        ok(srv.send_oob("EMAIL_SIGNIN", email, continueUrl="https://app.example.com/finish", canHandleCodeInApp=True))
        message = srv.mail_to(email, count=before + 1)[-1]["message"]
        code = code_of(action_link(message))
        return ok(srv.post("accounts:signInWithEmailLink", {"email": email, "oobCode": code, **extra}))

    def methods() -> list:
        body = ok(srv.post("accounts:createAuthUri", {"identifier": email, "continueUri": "http://localhost"}))
        return body.get("signinMethods", [])

    first = email_link_sign_in()
    account = oauth1_provider.add_user(email=email, screen_name="seedjourney")
    app, link = twitter_sign_in(srv, oauth1_provider, account)
    pending = ok(app.verify_assertion(link))
    # The SDK's accountExistsWithDifferentCredential: the email, no session, and a credential to link later.
    assert pending["needConfirmation"] is True and pending["email"] == email and "idToken" not in pending
    assert pending["oauthAccessToken"] == account.token and pending["oauthTokenSecret"] == account.secret
    assert methods() == ["emailLink"]

    second = email_link_sign_in()
    assert second["localId"] == first["localId"]
    credential = f"providerId=twitter.com&access_token={quote(pending['oauthAccessToken'])}" \
                 f"&oauth_token_secret={quote(pending['oauthTokenSecret'])}"
    linked = ok(srv.post("verifyAssertion", {"postBody": credential, "requestUri": "http://localhost",
                                             "idToken": second["idToken"], "returnSecureToken": True}, prefix=V3))
    assert linked["localId"] == first["localId"] and "needConfirmation" not in linked
    assert methods() == ["emailLink", "twitter.com"]

    again_app, again_link = twitter_sign_in(srv, oauth1_provider, account)
    via_twitter = ok(again_app.verify_assertion(again_link))
    via_email = email_link_sign_in()
    assert via_twitter["localId"] == via_email["localId"] == first["localId"]

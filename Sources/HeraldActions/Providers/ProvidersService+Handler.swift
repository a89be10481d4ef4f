import Foundation
import HeraldCore
import HeraldHTTPClient

/// What the hosted sign-in handler answers the browser.
public enum HandlerAnswer: Sendable {
    /// Send the browser on (to the provider, or back to the app). `cookie` is the sealed pending flow to set,
    /// `""` to clear it, nil to leave it alone.
    case redirect(String, cookie: String?)
    /// Emulator mode: the page where the developer picks one of the provider's accounts or makes one up.
    case chooser(ProviderChooser)
    /// A web flow's end: the page that gives the JS SDK its event (`WebDelivery`); `cookie` as for `redirect`.
    case deliver(WebDelivery, cookie: String?)
}

/// Emulator mode's stand-in for the provider's approval page, as Firebase's emulator shows it.
public struct ProviderChooser: Sendable {
    public let providerId: String
    /// The provider's identities already in the ledger, newest first.
    public let accounts: [FederatedIdentity]
    /// The handler's query, which the chooser's form sends back with the chosen user.
    public let query: [(String, String)]
}

extension ProvidersService {
    /// How long a browser may take at the provider (the pending flow's cookie lives as long).
    public static let approvalLifetime: TimeInterval = 600
    /// How long the app may take to present the handler's answer to `verifyAssertion`.
    static let assertionLifetime: TimeInterval = 300

    /// The hosted sign-in handler (`/__/auth/handler`, `/emulator/auth/handler`): the web flow behind the Apple and
    /// Android SDKs' `OAuthProvider` (`getCredentialWith`, `signInWithProvider`).
    ///
    /// 1. The app opens it with its `sessionId` hash and callback. Herald sends the browser to the provider:
    ///    Twitter's `oauth/authenticate` after fetching a request token (OAuth 1.0a), or an OIDC provider's
    ///    authorization endpoint (authorization code flow with `state` and `nonce`). What it must remember
    ///    rides in a sealed, HttpOnly cookie.
    /// 2. The provider returns the browser here. Herald exchanges the verifier (Twitter) or the code (OIDC) for
    ///    the user's tokens and returns the browser to the app with a link whose `heraldAssertion` holds them,
    ///    sealed. Errors go back to the app as Firebase's `firebaseError`.
    /// 3. The app calls `verifyAssertion` with that link as `requestUri` and its raw `sessionId`; only the app that
    ///    started the flow can open the assertion, which is then verified like any other.
    ///
    /// In emulator mode step 1 shows an account chooser instead, and the link carries the emulator's unsigned
    /// `id_token`, as Firebase's emulator does.
    ///
    /// - Parameter query: The request's raw query (form-encoded).
    /// - Parameter handlerURL: The handler's public URL (`providers.handlerUrl`, or the URL the app opened).
    /// - Throws: `INVALID_ARGUMENT` for requests with no app to return to (the handler shows these on a page).
    public func signInHandler(query rawQuery: String, cookie: String?, handlerURL: String, clientIP: String? = nil, now: Date = Date())
        async throws -> HandlerAnswer
    {
        let query = Dictionary(IdpAssertion.formFields(rawQuery), uniquingKeysWith: { first, _ in first })
        // Twitter returns `oauth_token` and `oauth_verifier`, or only `denied=<request token>`.
        if let token = query["oauth_token"] ?? query["denied"], query["oauth_verifier"] != nil || query["denied"] != nil {
            return try await twitterReturn(token: token, query: query, cookie: cookie, now: now)
        }
        if let state = query["state"], query["code"] != nil || query["error"] != nil {
            return try await oidcReturn(state: state, query: query, cookie: cookie, now: now)
        }
        let start = try HandlerStart(query: query, apiKey: apiKey, authorizedDomains: authorizedDomains)
        if emulatorMode {
            return try await emulatorHandler(start, query: query, handlerURL: handlerURL)
        }
        let flow = start.flow
        guard flow.app.isWeb || providers.appCallbacks.contains(flow.app.callbackName) else {
            throw HeraldError(
                .invalidArgument,
                "the app '\(flow.app.callbackName)' may not receive sign-ins: add it to providers.appCallbacks")
        }
        let origin = Self.origin(of: handlerURL)
        do {
            // Each start costs a call to the provider: starts count like app emails (limits.ipSendsPerMinute).
            if let ip = clientIP, !sendLimiter.take(ip, now: now) {
                throw HeraldError(.tooManyAttempts, "too many sign-ins from this network; try again later")
            }
            var pending = PendingApproval(flow: flow, callback: handlerURL, expires: now.addingTimeInterval(Self.approvalLifetime))
            if flow.providerId == "twitter.com", let twitter = providers.twitter {
                let verifier = TwitterVerifier(settings: twitter)
                let (token, secret) = try await offload { try verifier.requestToken(callback: handlerURL) }
                pending.requestToken = token
                pending.requestSecret = secret
                let url = verifier.authorizationURL(requestToken: token, parameters: start.customParameters.sorted { $0.key < $1.key })
                return .redirect(url, cookie: try handlerSeal.seal(pending, purpose: Self.pendingPurpose))
            }
            if let provider = providers.oidc(flow.providerId), provider.hasWebFlow {
                let state = ActionCode.generate().plaintext
                let nonce = ActionCode.generate().plaintext
                let verifier = ActionCode.generate().plaintext  // 43 characters: RFC 7636 wants 43-128
                (pending.state, pending.nonce, pending.codeVerifier) = (state, nonce, verifier)
                var scopes = ["openid"]
                for scope in provider.scopes + start.scopes where !scopes.contains(scope) { scopes.append(scope) }
                let challenge = Base64URL.encode(ActionCode.hash(verifier))
                let parameters =
                    [
                        ("client_id", provider.clientID), ("redirect_uri", handlerURL), ("response_type", "code"),
                        ("scope", scopes.joined(separator: " ")), ("state", state), ("nonce", nonce),
                        ("code_challenge", challenge), ("code_challenge_method", "S256"),
                    ] + start.customParameters.sorted { $0.key < $1.key }
                let separator = provider.authorizationURL.contains("?") ? "&" : "?"
                let url = provider.authorizationURL + separator + PercentEncoding.query(parameters)
                return .redirect(url, cookie: try handlerSeal.seal(pending, purpose: Self.pendingPurpose))
            }
            throw HeraldError(
                .operationNotAllowed, "sign-in with \(flow.providerId) through the handler is not enabled (providers: in the config)")
        } catch let error as HeraldError {
            logger.warning(
                "sign-in handler: \(flow.providerId) refused: \(error.code)", metadata: ["provider": "\(flow.providerId)", "code": "\(error.code)"])
            return flow.answer(error: error, origin: origin, cookie: nil, apiKey: apiKey)
        }
    }

    /// Twitter returned the browser with the approved request token's verifier (or `denied`).
    private func twitterReturn(token: String, query: [String: String], cookie: String?, now: Date) async throws -> HandlerAnswer {
        let pending = try pendingApproval(cookie, now: now)
        guard let requestToken = pending.requestToken, let requestSecret = pending.requestSecret, Secret.equal(requestToken, token),
            let twitter = providers.twitter
        else { throw Self.staleHandler }
        return await finish(pending) {
            guard let verifier = query["oauth_verifier"], query["denied"] == nil else {
                throw HeraldError(.webContextCancelled, "the user did not approve the sign-in at twitter.com")
            }
            let (access, secret) = try await offload {
                try TwitterVerifier(settings: twitter).accessToken(requestToken: requestToken, secret: requestSecret, verifier: verifier)
            }
            return ApprovedAssertion(
                providerId: "twitter.com", session: pending.flow.session, accessToken: access, tokenSecret: secret,
                expires: now.addingTimeInterval(Self.assertionLifetime))
        }
    }

    /// An OIDC provider returned the browser with an authorization code (or an `error`).
    private func oidcReturn(state: String, query: [String: String], cookie: String?, now: Date) async throws -> HandlerAnswer {
        let pending = try pendingApproval(cookie, now: now)
        guard let expected = pending.state, Secret.equal(expected, state), let provider = providers.oidc(pending.flow.providerId)
        else { throw Self.staleHandler }
        return await finish(pending) {
            guard let code = query["code"], query["error"] == nil else {
                let reason = query["error"] ?? "no code"
                if reason == "access_denied" {
                    throw HeraldError(.webContextCancelled, "the user did not approve the sign-in at \(provider.id)")
                }
                throw HeraldError(.invalidIDPResponse, "\(provider.id) refused the sign-in: \(reason.prefix(100))")
            }
            let form = PercentEncoding.query([
                ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", pending.callback), ("client_id", provider.clientID),
                ("client_secret", provider.clientSecret), ("code_verifier", pending.codeVerifier ?? ""),
            ])
            let answer = try await offload {
                try CurlHTTPClient(timeout: 10).post(provider.tokenURL, form: form, headers: ["Accept: application/json"])
            }
            try answer.requireOK(
                unavailable: "\(provider.id)'s token endpoint could not answer", refused: "\(provider.id)'s token endpoint refused the code")
            let (idToken, accessToken) = try OIDCTokenAnswer.tokens(in: answer.body, status: answer.status, of: provider.id)
            return ApprovedAssertion(
                providerId: provider.id, session: pending.flow.session, idToken: idToken, accessToken: accessToken,
                nonce: pending.nonce, expires: now.addingTimeInterval(Self.assertionLifetime))
        }
    }

    /// Returns the browser to the app: with the sealed assertion, or with the error that stopped it. Clears the cookie.
    private func finish(_ pending: PendingApproval, _ exchange: () async throws -> ApprovedAssertion) async -> HandlerAnswer {
        let flow = pending.flow
        let origin = Self.origin(of: pending.callback)
        do {
            let approved = try await exchange()
            let sealed = try handlerSeal.seal(approved, purpose: Self.assertionPurpose)
            let link = Self.link(pending.callback, [("providerId", flow.providerId), (IdpAssertion.sealedField, sealed)])
            return flow.answer(link: link, origin: origin, cookie: "", apiKey: apiKey)
        } catch {
            let failure = error as? HeraldError ?? HeraldError(.unavailable, "the sign-in could not be completed")
            logger.warning(
                "sign-in handler: \(flow.providerId) did not complete: \(failure.code)",
                metadata: ["provider": "\(flow.providerId)", "code": "\(failure.code)"])
            return flow.answer(error: failure, origin: origin, cookie: "", apiKey: apiKey)
        }
    }

    /// Emulator mode: the chooser, or, once the developer chose, the emulator's unsigned assertion back to the app.
    private func emulatorHandler(_ start: HandlerStart, query: [String: String], handlerURL: String) async throws -> HandlerAnswer {
        guard let sub = query["sub"], !sub.isEmpty else {
            let store = store
            let provider = start.providerId
            let accounts = try await offload { try store.identities(provider: provider, limit: 50) }
            let kept = query.filter { !["sub", "email", "name", "screen_name", "picture"].contains($0.key) }.sorted { $0.key < $1.key }
            return .chooser(ProviderChooser(providerId: start.providerId, accounts: accounts, query: kept))
        }
        var claims: [String: Any] = ["sub": sub, "email_verified": true]
        for field in ["email", "name", "screen_name", "picture"] {
            if let value = query[field], !value.isEmpty { claims[field] = value }
        }
        let json = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let link = Self.link(handlerURL, [("providerId", start.providerId), ("id_token", String(decoding: json, as: UTF8.self))])
        return start.flow.answer(link: link, origin: Self.origin(of: handlerURL), cookie: nil, apiKey: apiKey)
    }

    /// `verifyAssertion` with a link from the handler: the credential it sealed, if `sessionId` is the app's.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when the assertion is not this server's, has expired, names another
    ///   provider, or `sessionId` is not the one the flow was started with.
    func openHandlerAssertion(_ assertion: IdpAssertion, sessionId: String?, now: Date) throws -> IdpAssertion {
        guard let sealed = assertion.sealed else { return assertion }
        let approved = try handlerSeal.open(sealed, as: ApprovedAssertion.self, purpose: Self.assertionPurpose)
        guard approved.providerId == assertion.providerId.lowercased() else {
            throw HeraldError(.invalidIDPResponse, "the sign-in handler's assertion is for \(approved.providerId)")
        }
        guard approved.expires > now else {
            throw HeraldError(.invalidIDPResponse, "the sign-in handler's assertion has expired: sign in again")
        }
        guard approved.session.matches(sessionId) else {
            throw HeraldError(.invalidIDPResponse, "the sessionId is not the one the sign-in was started with")
        }
        return IdpAssertion(
            providerId: approved.providerId, idToken: approved.idToken, accessToken: approved.accessToken,
            oauthTokenSecret: approved.tokenSecret, nonce: approved.nonce)
    }

    /// Marks a handler assertion used: each is good for one `verifyAssertion`, so a link or event seen by
    /// anyone else (a log, a shared screen, a browser extension) cannot sign in again.
    ///
    /// - Throws: `INVALID_IDP_RESPONSE` when it was used before.
    func spendHandlerAssertion(_ assertion: IdpAssertion, now: Date) throws {
        guard let sealed = assertion.sealed else { return }
        guard spentAssertions.spend(Hex.sha256(sealed), until: now.addingTimeInterval(Self.assertionLifetime), now: now) else {
            throw HeraldError(.invalidIDPResponse, "this sign-in's answer was already used: sign in again")
        }
    }

    private func pendingApproval(_ cookie: String?, now: Date) throws -> PendingApproval {
        guard let cookie, !cookie.isEmpty, let pending = try? handlerSeal.open(cookie, as: PendingApproval.self, purpose: Self.pendingPurpose),
            pending.expires > now
        else { throw Self.staleHandler }
        return pending
    }

    static let pendingPurpose = "pending sign-in"
    static let assertionPurpose = "sign-in assertion"
    private static var staleHandler: HeraldError {
        HeraldError(.invalidArgument, "this sign-in has expired or was started in another browser: start it again from the app")
    }

    /// `scheme://host[:port]` of a URL.
    static func origin(of url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        return String(url[..<schemeEnd.upperBound]) + rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// `url` with these query parameters (any query it had is replaced).
    static func link(_ url: String, _ parameters: [(String, String)]) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" }) + "?" + PercentEncoding.query(parameters)
    }
}

extension AppReturn {
    /// The app's error, as the SDKs know it: `auth/network-request-failed` when the provider could not be
    /// reached, `auth/web-context-cancelled` when the user said no, otherwise `auth/internal-error` with detail.
    func url(authType: String, eventId: String, origin: String, error: HeraldError) -> String {
        url(authType: authType, eventId: eventId, origin: origin, errorCode: Self.sdkCode(of: error), message: "\(error.code) : \(error.detail)")
    }

    /// The SDKs' name for a handler error.
    static func sdkCode(of error: HeraldError) -> String {
        switch error.code {
        case .unavailable: "auth/network-request-failed"
        case .webContextCancelled: "auth/web-context-cancelled"
        case .operationNotAllowed: "auth/operation-not-allowed"
        case .tooManyAttempts: "auth/too-many-requests"
        default: "auth/internal-error"
        }
    }
}

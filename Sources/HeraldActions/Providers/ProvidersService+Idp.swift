import Foundation
import HeraldCore
import HeraldStore

/// `accounts:signInWithIdp` (v3 `verifyAssertion`): signing in, or linking, with an identity provider.
public struct IdpSignInRequest: Sendable {
    public var postBody: String?
    public var requestUri: String?
    /// The signed-in account asking to link the provider (Firebase's `idToken`), if any.
    public var idToken: String?
    /// The session id the app started the hosted sign-in handler with (its SHA-256 went to the handler).
    public var sessionId: String?
    /// Who asked, as the ledger's `account_events` record it.
    public var visitor: Visitor
    /// Firebase's `returnIdpCredential`: a link refused because the identity or its email is taken is answered beside
    /// the provider's credential (`errorMessage`) instead of as an error, so the app can sign in with it instead.
    public var returnIdpCredential: Bool

    public init(
        postBody: String?, requestUri: String?, idToken: String? = nil, sessionId: String? = nil, visitor: Visitor = Visitor(ip: nil, userAgent: nil),
        returnIdpCredential: Bool = false
    ) {
        self.postBody = postBody
        self.requestUri = requestUri
        self.idToken = idToken
        self.sessionId = sessionId
        self.visitor = visitor
        self.returnIdpCredential = returnIdpCredential
    }
}

/// What a provider sign-in did, with what the answer echoes.
public struct IdpSignInResult: Sendable {
    /// Nil when the link was refused (`refusal`).
    public let outcome: IdpOutcome?
    /// With `returnIdpCredential`: why a link was refused (`FEDERATED_USER_ID_ALREADY_LINKED`, `EMAIL_EXISTS`).
    public let refusal: HeraldError?
    public let identity: FederatedIdentity
    /// The provider's own answer (the ID token's claims, Google's userinfo, Twitter's user).
    public let profile: IdpProfile
    public let assertion: IdpAssertion
    /// Nil for `needConfirmation` and refusals: no session until the user proves the account the old way.
    public let session: Session?
}

extension ProvidersService {
    /// Verifies the provider's assertion, then applies Firebase's account rules (`IdpDecision`).
    ///
    /// In emulator mode any provider id is accepted with the Firebase emulator's unsigned assertions; otherwise
    /// the provider must be configured under `providers:` and its assertion verified (OIDC: signature, issuer,
    /// audience, expiry, nonce; Twitter: `verify_credentials`).
    /// - Throws: `INVALID_IDP_RESPONSE`, `INVALID_CREDENTIAL_OR_PROVIDER_ID`, `MISSING_OR_INVALID_NONCE`,
    ///   `OPERATION_NOT_ALLOWED` (provider not enabled), `FEDERATED_USER_ID_ALREADY_LINKED`, `EMAIL_EXISTS`,
    ///   `USER_DISABLED`, the ID token's errors when linking.
    public func signInWithIdp(_ request: IdpSignInRequest, now: Date = Date()) async throws -> IdpSignInResult {
        try requireAccountOwnership("signInWithIdp")
        let received = try IdpAssertion(postBody: request.postBody, requestUri: request.requestUri)
        // Forged or stale assertions count as failed sign-ins of the client, as wrong passwords do.
        if let ip = request.visitor.ip, !clientFailures.allows(ip, now: now) {
            let refusal = LimitRefusal(counter: "signin-ip", key: IPNetwork.ledgerKey(ip), error: AccountsService.lockedOut)
            throw try await offload { self.refusals.refused(refusal, now: now) }
        }
        let (identity, profile, trusted): (FederatedIdentity, IdpProfile, Bool)
        let assertion: IdpAssertion
        do {
            assertion = try openHandlerAssertion(received, sessionId: request.sessionId, now: now)
            (identity, profile, trusted) = try await verify(assertion)
            try spendHandlerAssertion(received, now: now)
        } catch let error as HeraldError where [.invalidIDPResponse, .missingOrInvalidNonce, .unavailable].contains(error.code) {
            // A provider whose keys cannot be fetched counts too: each such sign-in may have cost a fetch.
            if let ip = request.visitor.ip { _ = clientFailures.take(ip, now: now) }
            throw error
        }
        let linkingUID: String? = if let token = request.idToken { try await sessions.account(forIDToken: token).uid } else { nil }
        // Only a trusted provider proves an address: an untrusted one's account starts unproven, so a later reset or
        // email-link sign-in by the address's owner ends every credential on it. Under enumeration protection an
        // address the provider does not even call verified claims nothing: it neither finds an account (whose existence
        // `needConfirmation` would reveal) nor gives a new account the address, which its owner could then not sign up with.
        var vouched = identity
        if !trusted { vouched.emailVerified = false }
        if enumerationProtection && !trusted && !identity.emailVerified { vouched.email = nil }
        let claimed = vouched
        let store = store
        let outcome: IdpOutcome
        do {
            outcome = try await offload {
                try store.signIn(with: claimed, linking: linkingUID, trusted: trusted, visitor: request.visitor, now: now)
            }
        } catch let error as HeraldError
            where request.returnIdpCredential && [.federatedUserIDAlreadyLinked, .emailExists].contains(error.code)
        {
            return IdpSignInResult(
                outcome: nil, refusal: error, identity: identity, profile: profile, assertion: assertion, session: nil)
        }
        guard !outcome.needsConfirmation else {
            return IdpSignInResult(
                outcome: outcome, refusal: nil, identity: identity, profile: profile, assertion: assertion, session: nil)
        }
        let session = try await sessions.session(for: outcome.account, provider: identity.providerId, now: now)
        return IdpSignInResult(
            outcome: outcome, refusal: nil, identity: identity, profile: profile, assertion: assertion, session: session)
    }

    /// The identity an assertion proves, what the provider says of its user, and whether its verified email proves
    /// the address.
    private func verify(_ assertion: IdpAssertion) async throws -> (FederatedIdentity, IdpProfile, Bool) {
        if emulatorMode {
            // As the emulator: any provider, unsigned claims, and a verified email is taken at its word.
            let (identity, profile) = try assertion.emulatorIdentity()
            return (identity, profile, true)
        }
        if let provider = providers.oidc(assertion.providerId) {
            guard let token = assertion.idToken else {
                throw HeraldError(.invalidCredentialOrProviderID, "\(provider.id) sign-in needs an id_token")
            }
            let verifier = OIDCTokenVerifier(providerId: provider.id, issuer: provider.issuer, clientID: provider.clientID)
            let identity: FederatedIdentity
            do {
                identity = try await verifier.verify(token, keys: try await jwks.keys(for: provider), nonce: assertion.nonce)
            } catch let error as HeraldError where error.code == .invalidIDPResponse {
                // Perhaps the provider rotated its keys: fetch them again (at most once a minute) and retry once.
                identity = try await verifier.verify(token, keys: try await jwks.keys(for: provider, refresh: true), nonce: assertion.nonce)
            }
            let json = IdpAssertion.claimsJSON(token) ?? Data("{}".utf8)
            let claims = ProviderClaims(json: json) ?? ProviderClaims()
            return (identity, IdpProfile(claims: claims, json: json, of: identity), provider.trusted)
        }
        if assertion.providerId == "twitter.com", let twitter = providers.twitter {
            guard let token = assertion.accessToken, let secret = assertion.oauthTokenSecret else {
                throw HeraldError(.invalidCredentialOrProviderID, "twitter.com sign-in needs access_token and oauth_token_secret")
            }
            let (identity, raw) = try await offload { try TwitterVerifier(settings: twitter).verify(token: token, secret: secret) }
            return (identity, IdpProfile(rawUserInfo: raw), twitter.trusted)
        }
        throw HeraldError(.operationNotAllowed, "the identity provider \(assertion.providerId) is not enabled (providers: in the config)")
    }
}

import Foundation
import HeraldCore
import JWTKit

/// Verifies an OpenID Connect provider's ID token (Google, Apple, `oidc.<name>`): its signature against
/// the provider's keys, then issuer, audience (the configured client id), expiry and, when the app sent
/// one, the nonce. What it vouches for becomes a `FederatedIdentity`.
///
/// ```swift
/// let verifier = OIDCTokenVerifier(providerId: "google.com", issuer: "https://accounts.google.com", clientID: "1234.apps…")
/// let identity = try await verifier.verify(idToken, keys: keys, nonce: nil)
/// ```
public struct OIDCTokenVerifier: Sendable {
    public let providerId: String
    public let issuer: String
    public let clientID: String
    /// Clock skew allowed on `exp` and `iat`.
    public var leeway: TimeInterval = 60

    public init(providerId: String, issuer: String, clientID: String) {
        self.providerId = providerId
        self.issuer = issuer
        self.clientID = clientID
    }

    /// - Throws: `INVALID_IDP_RESPONSE` for a bad signature, issuer, audience or expiry, or a token without a
    ///   subject; `MISSING_OR_INVALID_NONCE` when `nonce` is given and the token's differs.
    public func verify(_ token: String, keys: JWTKeyCollection, nonce: String?, now: Date = Date()) async throws -> FederatedIdentity {
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch {
            throw HeraldError(.invalidIDPResponse, "the \(providerId) ID token's signature does not verify")
        }
        guard claims.iss.value == issuer else {
            throw HeraldError(.invalidIDPResponse, "the \(providerId) ID token was issued by \(claims.iss.value), not \(issuer)")
        }
        guard claims.aud.value.contains(clientID) else {
            throw HeraldError(.invalidIDPResponse, "the \(providerId) ID token is for another client")
        }
        guard claims.exp.value.addingTimeInterval(leeway) > now else {
            throw HeraldError(.invalidIDPResponse, "the \(providerId) ID token has expired")
        }
        if let iat = claims.iat, iat.value > now.addingTimeInterval(leeway) {
            throw HeraldError(.invalidIDPResponse, "the \(providerId) ID token was issued in the future")
        }
        if let nonce, claims.nonce != nonce, claims.nonce != Hex.sha256(nonce) {
            throw HeraldError(.missingOrInvalidNonce, "")
        }
        guard !claims.sub.value.isEmpty else { throw HeraldError(.invalidIDPResponse, "the ID token has no subject") }
        return FederatedIdentity(
            providerId: providerId, rawId: claims.sub.value, email: claims.email?.lowercased(),
            emailVerified: claims.email != nil && (claims.emailVerified?.value ?? false), displayName: claims.name,
            photoURL: claims.picture)
    }

    /// The claims Herald reads; `verify(using:)` is left to `verify` above, which names each failure.
    struct Claims: JWTPayload {
        let sub: SubjectClaim
        let iss: IssuerClaim
        let aud: AudienceClaim
        let exp: ExpirationClaim
        let iat: IssuedAtClaim?
        let nonce: String?
        let email: String?
        let emailVerified: EmailVerifiedClaim?
        let name: String?
        let picture: String?

        enum CodingKeys: String, CodingKey {
            case sub, iss, aud, exp, iat, nonce, email, name, picture
            case emailVerified = "email_verified"
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

import Crypto
import CryptoExtras
import Foundation
import HeraldCore
import JWTKit
import Testing

@testable import HeraldActions

/// A provider's ID tokens, signed here with a key of the test's own and checked against its JWKS.
@Suite struct OIDCTokenVerifierTests {
    let issuer = "https://issuer.example.com"
    let clientID = "client-123"
    let key: JWTKit.Insecure.RSA.PrivateKey
    let signer = JWTKeyCollection()
    let keys = JWTKeyCollection()

    struct Token: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var nonce: String?
        var email: String?
        var email_verified: Bool?
        var name: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    init() async throws {
        key = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        await signer.add(rsa: key, digestAlgorithm: .sha256, kid: "k1")
        let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
        let jwks =
            #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"k1","n":"\#(Base64URL.encode(Array(modulus)))","e":"\#(Base64URL.encode(Array(exponent)))"}]}"#
        _ = try await keys.add(jwksJSON: jwks)
    }

    func token(
        sub: String = "user-1", iss: String? = nil, aud: String? = nil, expiresIn: TimeInterval = 600, nonce: String? = nil,
        email: String? = "Ada@Example.com", verified: Bool? = true, with collection: JWTKeyCollection? = nil
    ) async throws -> String {
        let now = Date()
        let payload = Token(
            sub: .init(value: sub), iss: .init(value: iss ?? issuer), aud: .init(value: [aud ?? clientID]),
            exp: .init(value: now.addingTimeInterval(expiresIn)), iat: .init(value: now), nonce: nonce, email: email,
            email_verified: verified, name: "Ada")
        return try await (collection ?? signer).sign(payload, kid: "k1")
    }

    var verifier: OIDCTokenVerifier { OIDCTokenVerifier(providerId: "oidc.example", issuer: issuer, clientID: clientID) }

    @Test func aGoodTokenBecomesAnIdentity() async throws {
        let identity = try await verifier.verify(try await token(), keys: keys, nonce: nil)
        #expect(
            identity
                == FederatedIdentity(providerId: "oidc.example", rawId: "user-1", email: "ada@example.com", emailVerified: true, displayName: "Ada"))
    }

    @Test func forgedExpiredForeignAndMisissuedTokensAreRefused() async throws {
        let forger = JWTKeyCollection()
        await forger.add(
            rsa: try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)), digestAlgorithm: .sha256, kid: "k1")
        for bad in [
            try await token(with: forger), try await token(expiresIn: -3600), try await token(aud: "someone-else"),
            try await token(iss: "https://evil.example.com"),
        ] {
            await #expect(throws: HeraldError.self) { try await verifier.verify(bad, keys: keys, nonce: nil) }
        }
    }

    @Test func theNonceMustMatchItselfOrItsHash() async throws {
        _ = try await verifier.verify(try await token(nonce: "n-1"), keys: keys, nonce: "n-1")
        _ = try await verifier.verify(try await token(nonce: Hex.sha256("n-2")), keys: keys, nonce: "n-2")
        await #expect(throws: HeraldError.self) { try await verifier.verify(try await token(nonce: "other"), keys: keys, nonce: "n-1") }
    }

    @Test func anUnverifiedEmailIsNotVouchedFor() async throws {
        let identity = try await verifier.verify(try await token(verified: nil), keys: keys, nonce: nil)
        #expect(identity.email == "ada@example.com" && !identity.emailVerified)
    }
}

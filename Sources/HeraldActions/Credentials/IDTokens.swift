import Foundation
import HeraldCore
import JWTKit
import Synchronization

/// Firebase ID tokens: RS256 JWTs with a `kid`, signed and verified with jwt-kit under the key file's
/// keys, valid one hour. Any backend verifies them with the JWKS (`/.well-known/jwks.json`) or Google's
/// x509 form, as it would Firebase's.
public final class IDTokens: Sendable {
    public static let lifetime: TimeInterval = 3600

    let projectID: String
    /// Every key that still verifies; the signing key's id is `signingKID`.
    private let collection = JWTKeyCollection()
    private let signingKID: JWKIdentifier
    private let keys: [(kid: String, key: Insecure.RSA.PrivateKey)]
    private let loaded = Mutex(false)
    /// The public keys as a JWKS, and as Google's `{kid: certificate PEM}`.
    public let jwks: PublicKeySet
    public let certificates: [String: String]

    init(file: SigningKeyFile, projectID: String, now: Date = Date()) throws {
        self.projectID = projectID
        let live = file.liveKeys(at: now)
        keys = try live.map { key in (key.kid, try Insecure.RSA.PrivateKey(backing: SigningKeyFile.privateKey(of: key, path: file.path))) }
        guard let signing = live.last, signing.retiredAt == nil else {
            throw HeraldError(.invalidConfiguration, "tokens.keyFile \(file.path): no signing key")
        }
        signingKID = JWKIdentifier(string: signing.kid)
        jwks = PublicKeySet(
            keys: try keys.map { kid, key in
                let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
                return .init(kid: kid, n: Base64URL.encode(Array(modulus)), e: Base64URL.encode(Array(exponent)))
            })
        certificates = Dictionary(uniqueKeysWithValues: live.map { ($0.kid, $0.certificate) })
    }

    /// The claims Herald reads back from a verified token.
    public struct Claims: Sendable {
        public let uid: String
        /// The issue time in milliseconds (compared with the account's `validSince`).
        public let issuedAt: Int64
        public let signInProvider: String
        /// Seconds.
        public let authTime: Int64
    }

    /// Signs an ID token for `account`, from a session that began at `authTime` with `provider`.
    public func issue(
        for account: Account, provider: String, identities linked: [FederatedIdentity] = [], authTime: Date, now: Date = Date()
    ) async throws -> String {
        var identities: [String: [String]] = [:]
        if let email = account.email { identities["email"] = [email] }
        for identity in linked { identities[identity.providerId, default: []].append(identity.rawId) }
        let issued = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        var payload = Payload(
            iss: IssuerClaim(value: issuer), aud: AudienceClaim(value: [projectID]), sub: SubjectClaim(value: account.uid),
            userID: account.uid, authTime: Int64(authTime.timeIntervalSince1970), iat: IssuedAtClaim(value: issued),
            exp: ExpirationClaim(value: issued.addingTimeInterval(Self.lifetime)), issuedAtMilliseconds: now.milliseconds,
            email: account.email, emailVerified: account.email == nil ? nil : account.emailVerified, name: account.displayName,
            picture: account.photoURL, firebase: .init(identities: identities, signInProvider: provider))
        payload.customClaims = CustomClaims.decode(account.customAttributes)
        var header = JWTHeader()
        header.typ = "JWT"
        return try await prepared().sign(payload, kid: signingKID, header: header)
    }

    /// - Throws: `INVALID_ID_TOKEN` for a malformed, forged or foreign token, `TOKEN_EXPIRED` past its expiry.
    public func verify(_ token: String) async throws -> Claims {
        let payload: Payload
        do {
            payload = try await prepared().verify(token, as: Payload.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw HeraldError(.tokenExpired, "")
        } catch {
            throw HeraldError(.invalidIDToken, "")
        }
        guard payload.iss.value == issuer, payload.aud.value == [projectID], payload.sub.value == payload.userID else {
            throw HeraldError(.invalidIDToken, "")
        }
        return Claims(
            uid: payload.sub.value, issuedAt: payload.issuedAtMilliseconds ?? payload.iat.value.milliseconds,
            signInProvider: payload.firebase.signInProvider, authTime: payload.authTime)
    }

    private var issuer: String { "https://securetoken.google.com/\(projectID)" }

    /// The key collection, with the keys added on first use (adding is an actor call).
    private func prepared() async -> JWTKeyCollection {
        if loaded.withLock({ $0 }) { return collection }
        for (kid, key) in keys {
            await collection.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        }
        loaded.withLock { $0 = true }
        return collection
    }

    /// A Firebase ID token's claims, plus `herald_iat_ms` (the issue time to the millisecond, so a
    /// revocation in the same second as a sign-in is exact).
    struct Payload: JWTPayload {
        struct Firebase: Codable, Sendable {
            let identities: [String: [String]]
            let signInProvider: String

            enum CodingKeys: String, CodingKey {
                case identities
                case signInProvider = "sign_in_provider"
            }
        }

        let iss: IssuerClaim
        let aud: AudienceClaim
        let sub: SubjectClaim
        let userID: String
        let authTime: Int64
        let iat: IssuedAtClaim
        let exp: ExpirationClaim
        let issuedAtMilliseconds: Int64?
        let email: String?
        let emailVerified: Bool?
        let name: String?
        let picture: String?
        let firebase: Firebase
        /// The account's custom claims, at the top level beside the others (written, never read back).
        var customClaims: [String: JSONValue] = [:]

        enum CodingKeys: String, CodingKey, CaseIterable {
            case iss, aud, sub, iat, exp, email, name, picture, firebase
            case userID = "user_id"
            case authTime = "auth_time"
            case issuedAtMilliseconds = "herald_iat_ms"
            case emailVerified = "email_verified"
        }

        /// A custom claim's name.
        struct ClaimName: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        /// Firebase's order of precedence: custom claims may replace `name` and `picture`, never what the token says
        /// of the account and the session (the reserved claims are refused when the claims are set; `email`,
        /// `email_verified`, `user_id` and Herald's own are written over them).
        func encode(to encoder: any Encoder) throws {
            var custom = encoder.container(keyedBy: ClaimName.self)
            let written: Set<String> = Set(CodingKeys.allCases.map(\.stringValue)).subtracting(["name", "picture"])
            for (name, value) in customClaims where !written.contains(name) {
                try custom.encode(value, forKey: ClaimName(stringValue: name))
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(iss, forKey: .iss)
            try container.encode(aud, forKey: .aud)
            try container.encode(sub, forKey: .sub)
            try container.encode(userID, forKey: .userID)
            try container.encode(authTime, forKey: .authTime)
            try container.encode(iat, forKey: .iat)
            try container.encode(exp, forKey: .exp)
            try container.encodeIfPresent(issuedAtMilliseconds, forKey: .issuedAtMilliseconds)
            try container.encodeIfPresent(email, forKey: .email)
            try container.encodeIfPresent(emailVerified, forKey: .emailVerified)
            if customClaims["name"] == nil { try container.encodeIfPresent(name, forKey: .name) }
            if customClaims["picture"] == nil { try container.encodeIfPresent(picture, forKey: .picture) }
            try container.encode(firebase, forKey: .firebase)
        }

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }
}

/// A JWKS of RSA signing keys, with the `use` member Google's sets carry (jwt-kit's `JWK` has none).
public struct PublicKeySet: Encodable, Sendable {
    public struct Key: Encodable, Sendable {
        public var kty = "RSA"
        public var alg = "RS256"
        public var use = "sig"
        public let kid: String
        public let n: String
        public let e: String
    }

    public let keys: [Key]
}

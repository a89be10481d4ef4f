import Crypto
import Foundation
import HeraldCore

/// Issues and checks Herald's ID tokens: JWTs signed with HMAC-SHA256 under the server's key, valid 1 h.
struct TokenSigner: Sendable {
    let key: SymmetricKey
    let projectID: String
    static let lifetime: TimeInterval = 3600

    /// The claims Herald reads back from a token.
    struct Claims: Sendable {
        let uid: String
        let issuedAtMilliseconds: Int64
    }

    /// The JOSE header: always HMAC-SHA256.
    struct Header: Codable {
        var alg = "HS256"
        var typ = "JWT"
    }

    /// The claims of a Firebase ID token, plus `herald_iat_ms`; `email` and `email_verified` only for an account with an email.
    struct Payload: Codable {
        struct Firebase: Codable {
            struct Identities: Codable {
                let email: [String]
            }

            enum CodingKeys: String, CodingKey {
                case signInProvider = "sign_in_provider"
                case identities
            }

            let signInProvider: String
            let identities: Identities
        }

        enum CodingKeys: String, CodingKey {
            case iss, aud, sub, iat, exp, firebase, email
            case userID = "user_id"
            case authTime = "auth_time"
            case issuedAtMilliseconds = "herald_iat_ms"
            case emailVerified = "email_verified"
        }

        let iss: String
        let aud: String
        let sub: String
        let userID: String
        let authTime: Int
        let iat: Int
        let exp: Int
        /// The issue time in milliseconds, with the same rounding as `validSince`.
        let issuedAtMilliseconds: Int64
        let firebase: Firebase
        let email: String?
        let emailVerified: Bool?
    }

    func issue(uid: String, email: String?, emailVerified: Bool, provider: String, now: Date = Date()) -> String {
        let seconds = Int(now.timeIntervalSince1970)
        let payload = Payload(
            iss: "https://securetoken.google.com/\(projectID)", aud: projectID, sub: uid, userID: uid, authTime: seconds, iat: seconds,
            exp: seconds + Int(Self.lifetime), issuedAtMilliseconds: now.milliseconds,
            firebase: .init(signInProvider: provider, identities: .init(email: email.map { [$0] } ?? [])),
            email: email, emailVerified: email == nil ? nil : emailVerified)
        let header = Self.segment(Header())
        let body = Self.segment(payload)
        return "\(header).\(body).\(sign("\(header).\(body)"))"
    }

    /// - Throws: `INVALID_ID_TOKEN` for a malformed or forged token, `TOKEN_EXPIRED` past its expiry.
    func verify(_ token: String, now: Date = Date()) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            Secret.equal(sign("\(parts[0]).\(parts[1])"), String(parts[2])),
            let data = Self.decode(String(parts[1])),
            let payload = try? JSONDecoder().decode(Payload.self, from: data),
            payload.aud == projectID
        else { throw HeraldError(.invalidIDToken, "") }
        guard Double(payload.exp) > now.timeIntervalSince1970 else { throw HeraldError(.tokenExpired, "") }
        return Claims(uid: payload.sub, issuedAtMilliseconds: payload.issuedAtMilliseconds)
    }

    /// A keyed MAC of `text`, base64url: also binds action-page forms to their code (CSRF).
    func sign(_ text: String) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }

    /// Base64url of compact JSON with sorted keys (and escaped slashes, as tokens have always been written).
    private static func segment(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Base64URL.encode(Array((try? encoder.encode(value)) ?? Data()))
    }

    private static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

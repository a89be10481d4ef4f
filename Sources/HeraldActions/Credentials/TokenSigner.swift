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

    func issue(uid: String, email: String?, emailVerified: Bool, provider: String, now: Date = Date()) -> String {
        let seconds = Int(now.timeIntervalSince1970)
        var payload: [String: Any] = [
            "iss": "https://securetoken.google.com/\(projectID)", "aud": projectID, "sub": uid, "user_id": uid,
            "auth_time": seconds, "iat": seconds, "exp": seconds + Int(Self.lifetime),
            "herald_iat_ms": now.milliseconds,  // the same rounding as validSince
            "firebase": ["sign_in_provider": provider, "identities": ["email": email.map { [$0] } ?? []]],
        ]
        if let email {
            payload["email"] = email
            payload["email_verified"] = emailVerified
        }
        let header = Self.segment(["alg": "HS256", "typ": "JWT"])
        let body = Self.segment(payload)
        return "\(header).\(body).\(sign("\(header).\(body)"))"
    }

    /// - Throws: `INVALID_ID_TOKEN` for a malformed or forged token, `TOKEN_EXPIRED` past its expiry.
    func verify(_ token: String, now: Date = Date()) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            Secret.equal(sign("\(parts[0]).\(parts[1])"), String(parts[2])),
            let data = Self.decode(String(parts[1])),
            let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let uid = payload["sub"] as? String, payload["aud"] as? String == projectID,
            let exp = (payload["exp"] as? NSNumber)?.doubleValue,
            let issued = (payload["herald_iat_ms"] as? NSNumber)?.int64Value
        else { throw HeraldError(.invalidIDToken, "") }
        guard exp > now.timeIntervalSince1970 else { throw HeraldError(.tokenExpired, "") }
        return Claims(uid: uid, issuedAtMilliseconds: issued)
    }

    /// A keyed MAC of `text`, base64url: also binds action-page forms to their code (CSRF).
    func sign(_ text: String) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }

    private static func segment(_ object: [String: Any]) -> String {
        Base64URL.encode(Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
    }

    private static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

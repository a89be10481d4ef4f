import Crypto
import Foundation

/// The signed, per-recipient token of a one-click unsubscribe link (RFC 8058): `<outbox id>.<mac>`, the MAC
/// being the first 16 bytes of HMAC-SHA256(key, "herald-unsubscribe:<outbox id>") in base64url.
///
/// It names the campaign email it came in, so the link carries no address, and it cannot be made for another.
///
/// ```swift
/// let tokens = UnsubscribeToken(key: key)
/// let token = tokens.token(for: 42)          // "42.Xq…"
/// tokens.outboxID(in: token)                  // 42
/// ```
public struct UnsubscribeToken: Sendable {
    private let key: SymmetricKey

    public init(key: SymmetricKey) {
        self.key = key
    }

    public func token(for outboxID: Int64) -> String {
        "\(outboxID).\(mac(outboxID))"
    }

    /// The outbox id a token names when its MAC is right; nil for anything else.
    public func outboxID(in token: String) -> Int64? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 19, let id = Int64(parts[0]), id > 0 else { return nil }
        let expected = Array(mac(id).utf8)
        let given = Array(parts[1].utf8)
        guard expected.count == given.count else { return nil }
        // Constant time: the comparison does not stop at the first wrong byte.
        var difference: UInt8 = 0
        for (a, b) in zip(expected, given) { difference |= a ^ b }
        return difference == 0 ? id : nil
    }

    private func mac(_ outboxID: Int64) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("herald-unsubscribe:\(outboxID)".utf8), using: key)
        return Data(Array(code).prefix(16)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

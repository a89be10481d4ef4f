import Crypto
import Foundation

/// The `Herald-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, as Stripe and
/// Standard Webhooks sign. The timestamp lets a receiver refuse replays older than a few minutes.
///
/// ```swift
/// let header = WebhookSignature.header(secret: secret, body: body, at: Date())  // "t=1764145920,v1=5f0c…"
/// ```
public enum WebhookSignature {
    public static func header(secret: String, body: String, at date: Date) -> String {
        let timestamp = Int64(date.timeIntervalSince1970)
        return "t=\(timestamp),v1=\(mac(secret: secret, body: body, timestamp: timestamp))"
    }

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"`.
    public static func mac(secret: String, body: String, timestamp: Int64) -> String {
        let key = SymmetricKey(data: Data(secret.utf8))
        let code = HMAC<SHA256>.authenticationCode(for: Data("\(timestamp).\(body)".utf8), using: key)
        return code.map { String(format: "%02x", $0) }.joined()
    }
}

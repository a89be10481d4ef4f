import Foundation
import HeraldCore

/// Signs and POSTs one webhook body to one endpoint, blocking (libcurl): call it from a thread of its own.
///
/// Headers: `Herald-Signature: t=…,v1=…` (`WebhookSignature`), `Herald-Event-Id`, `Herald-Event-Type`,
/// `Herald-Delivery-Id` and `Herald-Delivery-Attempt`. A 2xx answer is delivered; anything else is not.
///
/// ```swift
/// let answer = try WebhookPoster(timeout: 10).post(endpoint, body: json, eventID: "…", type: "sent", delivery: 7, attempt: 1)
/// ```
public struct WebhookPoster: Sendable {
    public struct Answer: Sendable, Hashable {
        public let status: Int
        /// The start of the body, for the ledger's `last_error`.
        public let excerpt: String

        public var isSuccess: Bool { (200..<300).contains(status) }
    }

    let client: CurlHTTPClient

    public init(timeout: TimeInterval) {
        client = CurlHTTPClient(timeout: max(1, Int(timeout.rounded(.up))), maxBytes: 1 << 20)
    }

    /// - Throws: `HeraldError(.unavailable)` when the endpoint cannot be reached or does not answer in time.
    public func post(
        _ endpoint: HeraldConfiguration.Webhooks.Endpoint, body: String, eventID: String, type: String, delivery: Int64?, attempt: Int,
        now: Date = Date()
    ) throws -> Answer {
        var headers = [
            "Herald-Signature: \(WebhookSignature.header(secret: endpoint.secret, body: body, at: now))",
            "Herald-Event-Id: \(eventID)", "Herald-Event-Type: \(type)", "Herald-Delivery-Attempt: \(attempt)",
            "User-Agent: Herald-Webhooks/1", "Expect:",
        ]
        if let delivery { headers.append("Herald-Delivery-Id: \(delivery)") }
        let answer = try client.post(endpoint.url, json: body, headers: headers)
        let text = String(decoding: answer.body.prefix(200), as: UTF8.self)
        return Answer(status: answer.status, excerpt: text.split(whereSeparator: \.isNewline).joined(separator: " "))
    }
}

import Foundation
import HeraldCore

/// The parts of webhook and link-event writing made outside SQL (the statements: `WebhookStatements`).
enum WebhookPayloads {
    /// A JSON object of the non-nil values, for a payload's `extra`.
    static func extraJSON(_ key: String, _ values: [String: String?]) -> String {
        let present = values.compactMapValues { $0 }
        guard let data = try? JSONSerialization.data(withJSONObject: [key: present], options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Who used a link, for a webhook payload's `visitor`.
    static func visitorJSON(_ visitor: Visitor) -> String {
        extraJSON("visitor", ["ip": visitor.ip, "userAgent": visitor.userAgent.map { String($0.prefix(512)) }])
    }

    /// What follows a PostgreSQL payload's own members: `}`, or `,` and the members of `extra` (a JSON object) with
    /// its `}` — SQLite's `json_patch` of keys the envelope lacks, which are the only ones callers pass.
    static func tail(_ extra: String) -> String {
        let body = extra.trimmingCharacters(in: .whitespacesAndNewlines)
        guard body.count >= 2, body.hasPrefix("{"), body.hasSuffix("}") else { return "}" }
        let inner = body.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
        return inner.isEmpty ? "}" : ",\(inner)}"
    }

    /// 128 random bits in hex.
    static func newEventID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(format: "%016llx%016llx", generator.next() as UInt64, generator.next() as UInt64)
    }

    /// The most clicks and rejections one code keeps as rows: enough for the audit (scanners, the person, a
    /// retry), and a bound on what anyone holding one real code can add by reloading its page.
    static let eventsPerCode = 20

    /// The event a recorded delivery outcome emits, if any.
    static func event(_ decision: DeliveryRecord.Decision) -> WebhookEvent? {
        switch decision {
        case .sent: .sent
        case .failed: .failed
        case .dead: .dead
        case .possiblyDelivered(retryAt: nil): .possiblyDelivered
        case .deferred, .returned, .possiblyDelivered: nil
        }
    }

    /// The columns `recordWebhookDelivery` sets from an outcome, as named arguments (`:state`, `:at`, `:next`,
    /// `:status`, `:error`, `:id`, `:lease`).
    static func deliveryUpdate(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) -> [String: SQLValue] {
        let state: WebhookDeliveryState
        var next: Int64?
        switch outcome.decision {
        case .delivered: state = .delivered
        case .dead: state = .dead
        case .retry(let when):
            state = .queued
            next = when.milliseconds
        }
        let values: [String: (any SQLBindable)?] = [
            "state": state.rawValue, "at": outcome.at.milliseconds, "next": next, "status": outcome.status,
            "error": outcome.error.map { String($0.prefix(500)) }, "id": delivery.id, "lease": delivery.leaseUntil.milliseconds,
        ]
        return values.mapValues { $0?.sqlValue ?? .null }
    }
}

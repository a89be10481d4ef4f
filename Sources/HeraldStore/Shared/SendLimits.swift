import Foundation
import HeraldCore

/// The send throttle, the hourly quotas and the pruning of the ledger's counters, the same on both stores (each
/// store runs the statements).
enum SendLimits {
    /// The query of a direct send's cooldown: `sent` and `latest` of the recipient's requests of the day.
    static func queuedCooldown(_ request: ActionRequest, key: String, at: Int64) -> (sql: String, values: [SQLValue]) {
        (
            """
            SELECT COUNT(*) AS sent, MAX(queued_at) AS latest FROM outbox
            WHERE recipient_key = ? AND action = ? AND queued_at > ? AND campaign_id IS NULL
            """, [.text(key), .text(request.kind.rawValue), .int(at - 86_400_000)]
        )
    }

    /// The query of a suppressed request's cooldown: `sent` and `latest` of the recipient's suppressed requests of the day.
    static func suppressedCooldown(_ request: ActionRequest, key: String, at: Int64) -> (sql: String, values: [SQLValue]) {
        (
            """
            SELECT COUNT(*) AS sent, MAX(requested_at) AS latest FROM suppressed_sends
            WHERE recipient_key = ? AND action = ? AND requested_at > ?
            """, [.text(key), .text(request.kind.rawValue), .int(at - 86_400_000)]
        )
    }

    /// Records a request answered "sent" but not sent: `action`, `recipient_key`, `reason`, `requested_at`.
    static let insertSuppressed = "INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) VALUES (?, ?, ?, ?)"

    /// A quota's count of an hour: `scope`, `key`, `hour`.
    static let quotaCount = "SELECT count FROM send_counts WHERE scope = ? AND key = ? AND hour = ?"

    /// Counts one email against a quota's hour (`scope`, `key`, `hour`).
    static let countOne = """
        INSERT INTO send_counts (scope, key, hour, count) VALUES (?, ?, ?, 1)
        ON CONFLICT (scope, key, hour) DO UPDATE SET count = send_counts.count + 1
        """

    /// `countOne` answering the count with this email.
    static let countOneReturning = countOne + "\nRETURNING count"

    /// The statements `pruneEvents` runs, each deleting at most 10,000 rows, with its one argument.
    static func pruneStatements(before: Date) -> [(sql: String, value: Int64)] {
        let at = before.milliseconds
        let hour = at / 3_600_000
        let quotaHour = Date().milliseconds / 3_600_000 - 2
        return [
            ("DELETE FROM link_events WHERE id IN (SELECT id FROM link_events WHERE at < ? LIMIT 10000)", at),
            ("DELETE FROM suppressed_sends WHERE id IN (SELECT id FROM suppressed_sends WHERE requested_at < ? LIMIT 10000)", at),
            ("DELETE FROM account_events WHERE id IN (SELECT id FROM account_events WHERE at < ? LIMIT 10000)", at),
            // Webhook deliveries that are done; queued ones stay however old (nothing is lost by a long outage).
            (
                "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < ? AND state <> 'queued' LIMIT 10000)",
                at
            ),
            ("DELETE FROM abuse_counts WHERE hour < ?", hour),  // one row per counter, key and hour: small
            // Quotas read only the current hour: a couple of hours of counts is all they need, whatever the retention.
            ("DELETE FROM send_counts WHERE hour < ?", max(hour, quotaHour)),
        ]
    }
}

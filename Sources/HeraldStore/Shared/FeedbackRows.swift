import Foundation
import HeraldCore

/// The rows a recorded report writes: its webhook's `extra` and a suppression's values (`FeedbackRules` in
/// HeraldCore decides what they are).
enum FeedbackRows {
    /// The `extra` of the `bounced` webhook a report emits.
    static func webhookExtra(_ feedback: MailFeedback) -> String {
        WebhookPayloads.extraJSON(
            "feedback", ["kind": feedback.kind.rawValue, "status": feedback.status, "diagnostic": String(feedback.diagnostic.prefix(1000))])
    }

    /// The values of a `suppressions` row, in the order `email, reason, scope, detail, outbox_id, created_at,
    /// updated_at, expires_at`.
    static func values(_ entry: Suppression, at: Int64) -> [SQLValue] {
        let values: [(any SQLBindable)?] = [
            entry.email, entry.reason.rawValue, entry.scope.rawValue, entry.detail, entry.outboxID, entry.createdAt.milliseconds,
            at, entry.expiresAt?.milliseconds,
        ]
        return values.map { $0?.sqlValue ?? .null }
    }
}

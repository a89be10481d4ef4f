import Foundation

/// What a bounce, complaint or unsubscribe does to its outbox row and to the suppression list: the rules every
/// ledger applies when it records one (the ledger reads and writes the rows).
public enum FeedbackRules {
    /// The state a report moves a row in `state` to, and its `last_reply`; nil when the row is left alone (a report
    /// about mail Herald still holds, a late bounce of an earlier attempt, is kept, not applied to the row; a
    /// complaint outranks a bounce).
    public static func transition(from state: OutboxState, _ feedback: MailFeedback) -> (state: OutboxState, reply: String)? {
        let next: OutboxState = feedback.kind == .complaint ? .complained : .bounced
        guard state == .sent || (state == .bounced && next == .complained) else { return nil }
        let reply = "\(next.rawValue) (\(feedback.kind.rawValue)): \(feedback.diagnostic)"
        return (next, String(reply.prefix(1000)))
    }

    /// The entry a report adds to the suppression list, if any; `recentSoft` counts the messages soft-bounced for
    /// `recipient` since a time (Unix milliseconds), and is asked only for a soft bounce.
    public static func suppression(
        for feedback: MailFeedback, recipient: String, softLimit: Int, softWindow: TimeInterval, now: Date,
        recentSoft: (_ since: Int64) throws -> Int
    ) throws -> Suppression? {
        var suppression: Suppression?
        switch feedback.kind {
        case .hard: suppression = Suppression(email: recipient, reason: .hardBounce, createdAt: now)
        case .complaint: suppression = Suppression(email: recipient, reason: .complaint, createdAt: now)
        case .soft:
            // Messages, not reports: a report delivered twice, or to two of the message's addresses, counts once.
            let recent = try recentSoft(now.milliseconds - Int64(softWindow * 1000))
            if recent >= softLimit {
                suppression = Suppression(
                    email: recipient, reason: .softBounce, createdAt: now, expiresAt: now.addingTimeInterval(softWindow))
                suppression?.detail = "\(recent) soft-bounced messages within \(DurationText.format(softWindow)); last: "
            }
        }
        guard var entry = suppression else { return nil }
        entry.outboxID = feedback.outboxID
        entry.detail = String(((entry.detail ?? "") + feedback.diagnostic).prefix(1000))
        return entry
    }

    /// Whether `entry` replaces the address's existing entry (its `scope` and `expires_at`): one that lapsed, is
    /// narrower (`campaigns` → `all`) or temporary where the new one is for good. A temporary entry (a soft
    /// bounce) never replaces one for good, so an unsubscribe outlives a full mailbox.
    public static func replaces(scope: String, expiresAt expires: Int64?, with entry: Suppression, at: Int64) -> Bool {
        let lapsed = expires.map { $0 <= at } ?? false
        let wider = scope == Suppression.Scope.campaigns.rawValue && entry.scope == .all
        let lasting = expires != nil && entry.expiresAt == nil
        let temporaryOverPermanent = expires == nil && entry.expiresAt != nil
        return lapsed || lasting || (wider && !temporaryOverPermanent)
    }
}

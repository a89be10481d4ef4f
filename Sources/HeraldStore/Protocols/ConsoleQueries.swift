import Foundation
import HeraldCore

/// What the `/admin` console reads beyond the reports: message search, one message's history, recent
/// sends, clicks, redemptions and feedback.
public protocol ConsoleQueries: Sendable {
    /// Outbox rows matching `search`, newest first, at most `limit`.
    func searchMessages(_ search: MessageSearch, limit: Int) throws -> [OutboxMessage]

    /// The row and its queueing, attempts, operator events, link events and feedback, oldest first; nil when
    /// there is no such row.
    func history(outboxID: Int64) throws -> MessageHistory?

    /// Delivery attempts finished since `since`, counted per bucket of `bucketSeconds`, outcome and reply class.
    func sendActivity(since: Date, bucketSeconds: TimeInterval) throws -> [SendActivity]

    /// Clicks and redemptions of links since `since`, counted per bucket of `bucketSeconds` and kind.
    func linkActivity(since: Date, bucketSeconds: TimeInterval) throws -> [LinkActivity]

    /// Bounces and complaints received since `since`, by kind.
    func feedbackCounts(since: Date) throws -> [MailFeedback.Kind: Int]
}

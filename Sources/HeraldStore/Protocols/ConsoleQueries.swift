import Foundation
import HeraldCore

/// What the `/admin` console reads beyond the reports: message search, one message's history, recent sends.
public protocol ConsoleQueries: Sendable {
    /// Outbox rows matching `search`, newest first, at most `limit`.
    func searchMessages(_ search: MessageSearch, limit: Int) throws -> [OutboxMessage]

    /// The row and its queueing, attempts, operator events, link events and feedback, oldest first; nil when
    /// there is no such row.
    func history(outboxID: Int64) throws -> MessageHistory?

    /// Delivery attempts finished since `since`, counted per five-minute bucket, outcome and reply class.
    func sendActivity(since: Date) throws -> [SendActivity]
}

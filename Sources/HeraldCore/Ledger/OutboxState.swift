import Foundation

/// Where an outbox row is in its life.
///
/// `queued → sending → sent | deferred → sending … | failed | dead | possibly-delivered`, plus `expired` and
/// `cancelled`; after `sent`, what came back: `bounced` (a delivery status notification or bounce) or `complained`
/// (a spam report). `possibly-delivered`: the server never answered the message's final dot, as often as
/// `worker.maxUncertainRetries` allows resending it; it may have been delivered, so it is not sent again.
public enum OutboxState: String, Sendable, CaseIterable, Codable {
    case queued, sending, sent, deferred, failed, dead, expired, cancelled, bounced, complained
    case possiblyDelivered = "possibly-delivered"

    /// States the worker may still act on.
    public var isPending: Bool { self == .queued || self == .sending || self == .deferred }
}

/// A summary of what the worker still has to do.
public struct QueueStatus: Sendable, Hashable {
    /// Rows queued, deferred or sending.
    public let pending: Int
    /// Of those, rows some worker holds (`sending`).
    public let sending: Int
    /// The earliest time a pending row becomes claimable (next attempt, or lease end).
    public let nextDue: Date?

    public init(pending: Int, sending: Int = 0, nextDue: Date?) {
        self.pending = pending
        self.sending = sending
        self.nextDue = nextDue
    }
}

/// One delivery attempt as recorded.
public struct DeliveryAttempt: Sendable, Hashable {
    public let outboxID: Int64
    public let attempt: Int
    public let outcome: String
    public let replyCode: Int?
    public let replyText: String?
    public let startedAt: Date
    public let finishedAt: Date

    public init(outboxID: Int64, attempt: Int, outcome: String, replyCode: Int?, replyText: String?, startedAt: Date, finishedAt: Date) {
        self.outboxID = outboxID
        self.attempt = attempt
        self.outcome = outcome
        self.replyCode = replyCode
        self.replyText = replyText
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }
}

import Foundation

/// What the worker decided about one attempt, ready to be written to the ledger.
public struct DeliveryRecord: Sendable {
    /// The row's next state and, for `deferred`, when to try again.
    public enum Decision: Sendable, Hashable {
        case sent
        case deferred(until: Date)
        case failed
        case dead
        /// The server or the connection failed, not the message: the row goes back uncharged, due at `until`.
        case returned(until: Date)
    }

    public let decision: Decision
    public let replyCode: Int?
    public let replyText: String
    public let startedAt: Date
    public let finishedAt: Date

    public init(decision: Decision, replyCode: Int?, replyText: String, startedAt: Date, finishedAt: Date) {
        self.decision = decision
        self.replyCode = replyCode
        self.replyText = replyText
        self.startedAt = startedAt
        self.finishedAt = finishedAt
    }

    var outcome: String {
        switch decision {
        case .sent: "sent"
        case .deferred: "deferred"
        case .failed: "failed"
        case .dead: "dead"
        case .returned: "connection"
        }
    }
}

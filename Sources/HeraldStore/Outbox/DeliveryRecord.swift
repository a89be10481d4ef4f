import Foundation
import HeraldCore

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
        /// No reply came to the message's final dot: the server may have delivered it. The attempt is charged and
        /// counted (`OutboxMessage.possiblyDelivered`), and the code keeps a sent one's lifetime (the link may be in
        /// the inbox). With `retryAt` the row is deferred until then; without, it ends `possibly-delivered`.
        case possiblyDelivered(retryAt: Date?)
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
        case .possiblyDelivered: OutboxState.possiblyDelivered.rawValue
        }
    }
}

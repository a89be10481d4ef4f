import Foundation
import HeraldCore

/// An outbox row in `herald messages --json`; `nextAttemptAt` is set only while the row is deferred, `feedbackAt`
/// (when the bounce or complaint that moved it arrived; `lastReply` holds its diagnostic) only once it bounced or
/// drew a complaint. `possiblyDelivered` counts the attempts whose final dot got no reply.
struct MessageJSON: Encodable {
    enum CodingKeys: String, CodingKey {
        case id, action, recipient, email, newEmail, locale, state, attempts, possiblyDelivered, lastReplyCode, lastReply, queuedAt,
            sentAt, messageId, nextAttemptAt, feedbackAt
    }

    let row: OutboxMessage

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(row.id, forKey: .id)
        try container.encode(row.kind.rawValue, forKey: .action)
        try container.encode(row.recipient.value, forKey: .recipient)
        try container.encode(row.email.value, forKey: .email)
        try container.encode(row.newEmail?.value, forKey: .newEmail)
        try container.encode(row.locale.value, forKey: .locale)
        try container.encode(row.state.rawValue, forKey: .state)
        try container.encode(row.attempts, forKey: .attempts)
        try container.encode(row.possiblyDelivered, forKey: .possiblyDelivered)
        try container.encode(row.lastReplyCode, forKey: .lastReplyCode)
        try container.encode(row.lastReply, forKey: .lastReply)
        try container.encode(row.queuedAt.iso8601, forKey: .queuedAt)
        try container.encode(row.sentAt?.iso8601, forKey: .sentAt)
        try container.encode(row.messageID, forKey: .messageId)
        try container.encode(row.state == .deferred ? row.nextAttemptAt.iso8601 : nil, forKey: .nextAttemptAt)
        try container.encode(row.feedbackAt?.iso8601, forKey: .feedbackAt)
    }
}

extension OutboxMessage {
    /// When the bounce or complaint that moved this row arrived: the row changes no more after that.
    var feedbackAt: Date? { state == .bounced || state == .complained ? updatedAt : nil }
}

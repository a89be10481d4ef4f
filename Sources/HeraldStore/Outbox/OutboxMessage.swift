import Foundation
import GRDB
import HeraldCore

/// One row of the outbox: the request and its delivery state.
public struct OutboxMessage: Sendable, Hashable, Identifiable {
    public let id: Int64
    public let kind: ActionKind
    public let recipient: EmailAddress
    public let email: EmailAddress
    public let newEmail: EmailAddress?
    public let locale: LocaleTag
    public let displayName: String?
    public let settings: ActionCodeSettings
    public let messageID: String
    public let priority: Int
    public let state: OutboxState
    public let attempts: Int
    public let queuedAt: Date
    public let nextAttemptAt: Date
    public let leaseUntil: Date?
    public let lastReplyCode: Int?
    public let lastReply: String?
    public let sentAt: Date?
    public let updatedAt: Date
    /// The campaign the row belongs to; nil for transactional mail.
    public let campaignID: Int64?
    /// Extra template variables (campaign CSV columns).
    public let variables: [String: String]
    /// Code lifetime for this row; nil means `links.lifetime`.
    public let linkLifetime: TimeInterval?

    init(row: Row) throws {
        id = row["id"]
        guard let kind = ActionKind(rawValue: row["action"]), let state = OutboxState(rawValue: row["state"]) else {
            throw HeraldError(.notFound, "outbox row \(row["id"] as Int64) has an unknown action or state")
        }
        self.kind = kind
        self.state = state
        recipient = try EmailAddress(row["recipient"])
        email = try EmailAddress(row["email"])
        newEmail = try (row["new_email"] as String?).map { try EmailAddress($0) }
        locale = try LocaleTag(row["locale"])
        displayName = row["display_name"]
        settings = try JSONDecoder().decode(ActionCodeSettings.self, from: Data((row["settings"] as String).utf8))
        messageID = row["message_id"]
        priority = row["priority"]
        attempts = row["attempts"]
        queuedAt = Date(milliseconds: row["queued_at"])
        nextAttemptAt = Date(milliseconds: row["next_attempt_at"])
        leaseUntil = (row["lease_until"] as Int64?).map(Date.init(milliseconds:))
        lastReplyCode = row["last_reply_code"]
        lastReply = row["last_reply"]
        sentAt = (row["sent_at"] as Int64?).map(Date.init(milliseconds:))
        updatedAt = Date(milliseconds: row["updated_at"])
        campaignID = row["campaign_id"]
        variables = try (row["variables"] as String?).map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) } ?? [:]
        linkLifetime = row["link_lifetime"]
    }
}

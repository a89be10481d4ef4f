import Foundation

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
    /// Attempts whose final dot got no reply, so that the message may have been delivered by each.
    public let possiblyDelivered: Int

    public init(
        id: Int64, kind: ActionKind, recipient: EmailAddress, email: EmailAddress, newEmail: EmailAddress?, locale: LocaleTag,
        displayName: String?, settings: ActionCodeSettings, messageID: String, priority: Int, state: OutboxState, attempts: Int,
        queuedAt: Date, nextAttemptAt: Date, leaseUntil: Date?, lastReplyCode: Int?, lastReply: String?, sentAt: Date?, updatedAt: Date,
        campaignID: Int64?, variables: [String: String], linkLifetime: TimeInterval?, possiblyDelivered: Int = 0
    ) {
        self.id = id
        self.kind = kind
        self.recipient = recipient
        self.email = email
        self.newEmail = newEmail
        self.locale = locale
        self.displayName = displayName
        self.settings = settings
        self.messageID = messageID
        self.priority = priority
        self.state = state
        self.attempts = attempts
        self.queuedAt = queuedAt
        self.nextAttemptAt = nextAttemptAt
        self.leaseUntil = leaseUntil
        self.lastReplyCode = lastReplyCode
        self.lastReply = lastReply
        self.sentAt = sentAt
        self.updatedAt = updatedAt
        self.campaignID = campaignID
        self.variables = variables
        self.linkLifetime = linkLifetime
        self.possiblyDelivered = possiblyDelivered
    }
}

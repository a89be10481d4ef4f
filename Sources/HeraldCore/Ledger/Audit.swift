import Foundation

/// Which links `herald audit` lists.
public struct AuditFilter: Sendable {
    public enum Status: String, Sendable, CaseIterable { case redeemed, unredeemed, expired }

    public var email: EmailAddress?
    public var campaign: Int64?
    public var kind: ActionKind?
    public var since: Date?
    public var until: Date?
    public var status: Status?
    /// Newest first (the console's page) instead of oldest first (exports and `herald audit`).
    public var newestFirst = false

    public init() {}
}

/// One link: who got it, when, what the server said, and what became of it.
public struct AuditRow: Sendable {
    public let id: Int64
    public let recipient: String
    public let action: String
    public let campaign: Int64?
    public let state: String
    public let queuedAt: Date
    public let sentAt: Date?
    public let smtpReply: String?
    public let firstClickAt: Date?
    public let redeemedAt: Date?
    public let redeemedIP: String?
    public let redeemedUserAgent: String?
    public let expired: Bool
    public let superseded: Bool
    /// The latest bounce or complaint about the mail: when, and `kind status: diagnostic`.
    public let feedbackAt: Date?
    public let feedback: String?
    /// How the code was redeemed: `link` (clicked) or `typed` (its code typed); nil while unredeemed.
    public let redeemedWith: String?
    /// The account's address when the mail went to another (an email change's notice to the old address); nil
    /// otherwise. Not a column of the audit; the message archive keeps it so `--email` finds such mail there too.
    public var email: String?

    public init(
        id: Int64, recipient: String, action: String, campaign: Int64?, state: String, queuedAt: Date, sentAt: Date?, smtpReply: String?,
        firstClickAt: Date?, redeemedAt: Date?, redeemedIP: String?, redeemedUserAgent: String?, expired: Bool, superseded: Bool,
        feedbackAt: Date? = nil, feedback: String? = nil, redeemedWith: String? = nil, email: String? = nil
    ) {
        self.email = email
        self.redeemedWith = redeemedWith
        self.feedbackAt = feedbackAt
        self.feedback = feedback
        self.id = id
        self.recipient = recipient
        self.action = action
        self.campaign = campaign
        self.state = state
        self.queuedAt = queuedAt
        self.sentAt = sentAt
        self.smtpReply = smtpReply
        self.firstClickAt = firstClickAt
        self.redeemedAt = redeemedAt
        self.redeemedIP = redeemedIP
        self.redeemedUserAgent = redeemedUserAgent
        self.expired = expired
        self.superseded = superseded
    }
}

extension AuditFilter {
    /// Whether `row` is one the filter lists: what the ledger's audit query asks of a row, asked of a row read back
    /// from the message archive. Addresses match in any case.
    public func matches(_ row: AuditRow) -> Bool {
        if let email {
            let address = email.value.lowercased()
            guard row.recipient.lowercased() == address || (row.campaign == nil && row.email?.lowercased() == address) else {
                return false
            }
        }
        if let campaign, row.campaign != campaign { return false }
        if let kind, row.action != kind.rawValue { return false }
        if let since, row.queuedAt < since { return false }
        if let until, row.queuedAt > until { return false }
        switch status {
        case .redeemed: return row.redeemedAt != nil
        case .unredeemed: return row.sentAt != nil && row.redeemedAt == nil
        case .expired: return row.expired
        case nil: return true
        }
    }
}

/// An audit row as a JSON object: the keys and values of `herald audit --format jsonl` (every key present, `null`
/// for what the row lacks, times in ISO 8601), and `email` when the row has one. The message archive's lines.
extension AuditRow: Codable {
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, recipient, action, campaign, state, queuedAt, sentAt, smtpReply, firstClickAt, redeemedAt, redeemedIp,
            redeemedUserAgent, expired, superseded, feedbackAt, feedback, redeemedWith, email
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(recipient, forKey: .recipient)
        try container.encode(action, forKey: .action)
        try container.encode(campaign, forKey: .campaign)
        try container.encode(state, forKey: .state)
        try container.encode(queuedAt.iso8601, forKey: .queuedAt)
        try container.encode(sentAt?.iso8601, forKey: .sentAt)
        try container.encode(smtpReply, forKey: .smtpReply)
        try container.encode(firstClickAt?.iso8601, forKey: .firstClickAt)
        try container.encode(redeemedAt?.iso8601, forKey: .redeemedAt)
        try container.encode(redeemedIP, forKey: .redeemedIp)
        try container.encode(redeemedUserAgent, forKey: .redeemedUserAgent)
        try container.encode(expired, forKey: .expired)
        try container.encode(superseded, forKey: .superseded)
        try container.encode(feedbackAt?.iso8601, forKey: .feedbackAt)
        try container.encode(feedback, forKey: .feedback)
        try container.encode(redeemedWith, forKey: .redeemedWith)
        try container.encodeIfPresent(email, forKey: .email)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func time(_ key: CodingKeys) throws -> Date? {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let date = Date(iso8601: text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "'\(text)' is not an ISO 8601 time")
            }
            return date
        }
        let id = try container.decode(Int64.self, forKey: .id)
        guard let queuedAt = try time(.queuedAt) else {
            throw DecodingError.keyNotFound(CodingKeys.queuedAt, .init(codingPath: decoder.codingPath, debugDescription: "no queuedAt"))
        }
        self.init(
            id: id, recipient: try container.decode(String.self, forKey: .recipient),
            action: try container.decode(String.self, forKey: .action), campaign: try container.decodeIfPresent(Int64.self, forKey: .campaign),
            state: try container.decode(String.self, forKey: .state), queuedAt: queuedAt, sentAt: try time(.sentAt),
            smtpReply: try container.decodeIfPresent(String.self, forKey: .smtpReply), firstClickAt: try time(.firstClickAt),
            redeemedAt: try time(.redeemedAt), redeemedIP: try container.decodeIfPresent(String.self, forKey: .redeemedIp),
            redeemedUserAgent: try container.decodeIfPresent(String.self, forKey: .redeemedUserAgent),
            expired: try container.decode(Bool.self, forKey: .expired), superseded: try container.decode(Bool.self, forKey: .superseded),
            feedbackAt: try time(.feedbackAt), feedback: try container.decodeIfPresent(String.self, forKey: .feedback),
            redeemedWith: try container.decodeIfPresent(String.self, forKey: .redeemedWith),
            email: try container.decodeIfPresent(String.self, forKey: .email))
    }
}

/// One provider sign-in, link, take-over or `needConfirmation` answer (`account_events`), for `herald audit --sign-ins`.
public struct AccountEventRow: Sendable, Hashable {
    public let id: Int64
    public let at: Date
    public let uid: String?
    public let email: String?
    /// `idp-sign-up`, `idp-sign-in`, `idp-link`, `idp-take-over`, `idp-need-confirmation`.
    public let kind: String
    public let providerId: String?
    /// The provider's id of the user.
    public let rawId: String?
    public let ip: String?
    public let userAgent: String?

    public init(
        id: Int64, at: Date, uid: String?, email: String?, kind: String, providerId: String?, rawId: String?, ip: String?,
        userAgent: String?
    ) {
        self.id = id
        self.at = at
        self.uid = uid
        self.email = email
        self.kind = kind
        self.providerId = providerId
        self.rawId = rawId
        self.ip = ip
        self.userAgent = userAgent
    }
}

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

    public init(
        id: Int64, recipient: String, action: String, campaign: Int64?, state: String, queuedAt: Date, sentAt: Date?, smtpReply: String?,
        firstClickAt: Date?, redeemedAt: Date?, redeemedIP: String?, redeemedUserAgent: String?, expired: Bool, superseded: Bool,
        feedbackAt: Date? = nil, feedback: String? = nil, redeemedWith: String? = nil
    ) {
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

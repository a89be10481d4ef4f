import Foundation

/// An address Herald no longer mails: what put it there, and which mail it stops.
///
/// Hard bounces, complaints, repeated soft bounces and manual entries stop every email; an unsubscribe stops
/// campaign mail only, so password resets and sign-in links still reach the person who asks for them.
public struct Suppression: Sendable, Hashable, Codable {
    public enum Reason: String, Sendable, Hashable, Codable, CaseIterable {
        case hardBounce = "hard-bounce"
        case softBounce = "soft-bounce"
        case complaint
        case unsubscribe
        case manual
    }

    /// Which mail a suppression stops.
    public enum Scope: String, Sendable, Hashable, Codable, CaseIterable {
        /// Every email, transactional or campaign.
        case all
        /// Campaign mail only.
        case campaigns
    }

    /// The address, as the outbox keeps recipients (lower-cased).
    public var email: String
    public var reason: Reason
    public var scope: Scope
    /// What happened: a bounce's diagnostic, the campaign unsubscribed from, an operator's note.
    public var detail: String?
    /// The outbox row that caused it, when one did.
    public var outboxID: Int64?
    public var createdAt: Date
    /// When it lapses: soft-bounce suppressions last `bounces.softWindow` (a full mailbox empties); nil is for good.
    public var expiresAt: Date?

    public init(
        email: String, reason: Reason, scope: Scope? = nil, detail: String? = nil, outboxID: Int64? = nil, createdAt: Date,
        expiresAt: Date? = nil
    ) {
        self.expiresAt = expiresAt
        self.email = email
        self.reason = reason
        self.scope = scope ?? reason.defaultScope
        self.detail = detail
        self.outboxID = outboxID
        self.createdAt = createdAt
    }

    /// Whether this suppression stops an email of a campaign (`campaign`) or a transactional one.
    public func stops(campaign: Bool) -> Bool { scope.stops(campaign: campaign) }
}

extension Suppression.Scope {
    /// Whether an entry of this scope stops an email of a campaign (`campaign`) or a transactional one: every entry
    /// stops campaign mail, an `all` entry every email. The one spelling of the rule, for the rulebook's checks and
    /// the claim's.
    public func stops(campaign: Bool) -> Bool { self == .all || campaign }
}

extension Suppression.Reason {
    /// An unsubscribe stops campaigns; everything else stops all mail.
    public var defaultScope: Suppression.Scope { self == .unsubscribe ? .campaigns : .all }
}

/// What came back about a sent message: a bounce or a complaint, as the ledger records it.
public struct MailFeedback: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case hard, soft, complaint
    }

    public var outboxID: Int64
    public var kind: Kind
    /// The enhanced status code (RFC 3463), e.g. `5.1.1`.
    public var status: String?
    /// One line: the remote server's diagnostic or the report's type.
    public var diagnostic: String

    public init(outboxID: Int64, kind: Kind, status: String?, diagnostic: String) {
        self.outboxID = outboxID
        self.kind = kind
        self.status = status
        self.diagnostic = diagnostic
    }
}

/// What recording a bounce or complaint did.
public struct FeedbackOutcome: Sendable, Hashable {
    /// The row's recipient.
    public var recipient: String
    /// The row's state afterwards.
    public var state: OutboxState
    /// The suppression it added (or widened), if any.
    public var suppressed: Suppression?

    public init(recipient: String, state: OutboxState, suppressed: Suppression?) {
        self.recipient = recipient
        self.state = state
        self.suppressed = suppressed
    }
}

/// How many bounces or complaints of one kind (and enhanced-status class) a campaign's mail drew.
public struct FeedbackCount: Sendable, Hashable, Codable {
    public var kind: MailFeedback.Kind
    /// The status code's class and subject (`5.1` of `5.1.1`), or nil.
    public var statusClass: String?
    public var count: Int

    public init(kind: MailFeedback.Kind, statusClass: String?, count: Int) {
        self.kind = kind
        self.statusClass = statusClass
        self.count = count
    }
}

/// Where a page of the suppression list newest first ends: its last entry's time and address. As text
/// (`<Unix ms>,<address>`) it is the console's `after` parameter.
public struct SuppressionCursor: Sendable, Hashable {
    public var createdAt: Date
    public var email: String

    public init(createdAt: Date, email: String) {
        self.createdAt = createdAt
        self.email = email
    }

    /// The cursor after `entry`.
    public init(after entry: Suppression) {
        self.init(createdAt: entry.createdAt, email: entry.email)
    }

    /// `<Unix ms>,<address>`; nil when `text` is not one.
    public init?(_ text: String) {
        guard let comma = text.firstIndex(of: ","), let ms = Int64(text[..<comma]), ms >= 0 else { return nil }
        let email = String(text[text.index(after: comma)...])
        guard !email.isEmpty else { return nil }
        self.init(createdAt: Date(milliseconds: ms), email: email)
    }

    public var description: String { "\(createdAt.milliseconds),\(email)" }
}

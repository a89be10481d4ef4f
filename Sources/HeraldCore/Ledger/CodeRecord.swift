import Foundation

/// A stored action code (its hash, never the code) and its life so far.
public struct CodeRecord: Sendable, Hashable {
    public let id: Int64
    public let kind: ActionKind
    public let email: String
    public let newEmail: String?
    public let outboxID: Int64?
    /// The continue URL of the link the code was sent or returned in.
    public let continueURL: String?
    /// The campaign whose email carried the code.
    public let campaignID: Int64?
    public let createdAt: Date
    public let expiresAt: Date
    public let redeemedAt: Date?
    public let supersededAt: Date?

    public init(
        id: Int64, kind: ActionKind, email: String, newEmail: String?, outboxID: Int64?, continueURL: String?, campaignID: Int64?,
        createdAt: Date, expiresAt: Date, redeemedAt: Date?, supersededAt: Date?
    ) {
        self.id = id
        self.kind = kind
        self.email = email
        self.newEmail = newEmail
        self.outboxID = outboxID
        self.continueURL = continueURL
        self.campaignID = campaignID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.redeemedAt = redeemedAt
        self.supersededAt = supersededAt
    }

    /// Why a code cannot be used now, as Firebase's error: expired codes are distinct from invalid ones.
    public func problem(at now: Date, expecting kinds: Set<ActionKind>) -> HeraldError? {
        if !kinds.contains(kind) { return HeraldError(.invalidOOBCode, "") }
        if redeemedAt != nil || supersededAt != nil { return HeraldError(.invalidOOBCode, "") }
        if expiresAt <= now { return HeraldError(.expiredOOBCode, "") }
        return nil
    }
}

/// Who used a link: kept with every click, redemption and rejected attempt.
public struct Visitor: Sendable, Hashable {
    public var ip: String?
    public var userAgent: String?
    /// Whether an attempt with a code that does not exist is counted (in the hourly `unknown-code` counter, never
    /// as a row of its own); false once the visitor's address is over `limits.ipBadCodesPerMinute`.
    public var countsUnknownCodes = true

    public init(ip: String?, userAgent: String?) {
        self.ip = ip
        self.userAgent = userAgent
    }
}

/// What happened to a link, as `link_events` records it.
public enum LinkEventKind: String, Sendable, CaseIterable {
    /// A page view (a GET of the action page); never consumes the code.
    case click
    case redeemed
    case rejected
}

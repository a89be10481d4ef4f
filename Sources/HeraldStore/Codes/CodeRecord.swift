import Foundation
import GRDB
import HeraldCore

/// A stored action code (its hash, never the code) and its life so far.
public struct CodeRecord: Sendable, Hashable {
    public let id: Int64
    public let kind: ActionKind
    public let email: String
    public let newEmail: String?
    public let outboxID: Int64?
    public let createdAt: Date
    public let expiresAt: Date
    public let redeemedAt: Date?
    public let supersededAt: Date?

    init?(row: Row) {
        guard let kind = ActionKind(rawValue: row["action"]) else { return nil }
        id = row["id"]
        self.kind = kind
        email = row["email"]
        newEmail = row["new_email"]
        outboxID = row["outbox_id"]
        createdAt = Date(milliseconds: row["created_at"])
        expiresAt = Date(milliseconds: row["expires_at"])
        redeemedAt = (row["redeemed_at"] as Int64?).map(Date.init(milliseconds:))
        supersededAt = (row["superseded_at"] as Int64?).map(Date.init(milliseconds:))
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

    public init(ip: String?, userAgent: String?) {
        self.ip = ip
        self.userAgent = userAgent
    }
}

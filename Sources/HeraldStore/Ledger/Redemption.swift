import Foundation
import HeraldCore

/// The named redemption transactions. Each consumes the code and applies its effect (`RedemptionRules` in
/// HeraldCore) in one durable transaction: it reads the accounts the rule names, calls it, and writes the result.
extension LedgerEngine {
    public func consume(_ code: CodeSpelling, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date) throws -> CodeRecord {
        try redeem(code, expecting: kinds, visitor: visitor, now: now) { _, record in record }
    }

    public func redeemVerification(_ code: CodeSpelling, visitor: Visitor, now: Date) throws -> (account: Account, code: CodeRecord) {
        try redeem(code, expecting: [.verifyEmail, .verifyAndChangeEmail, .recoverEmail], visitor: visitor, now: now) { db, record in
            let holder = try RedemptionRules.address(of: record).flatMap { try Self.account(db, email: $0) }
            let account = try RedemptionRules.verify(record, holder: holder, now: now)
            try Self.update(db, account, now: now)  // EMAIL_EXISTS when another account took the address meanwhile
            return (account, record)
        }
    }

    public func redeemPasswordReset(_ code: CodeSpelling, passwordHash: String, visitor: Visitor, now: Date) throws -> Account {
        try redeem(code, expecting: [.resetPassword], visitor: visitor, now: now) { db, record in
            let holder = try Self.account(db, email: record.email)
            let account = try RedemptionRules.resetPassword(record, holder: holder, passwordHash: passwordHash, now: now)
            try Self.update(db, account, now: now)
            return account
        }
    }

    public func redeemEmailLinkSignIn(
        _ code: CodeSpelling, email: String, linkingTo uid: String?, newUID: String, visitor: Visitor, now: Date
    ) throws -> SignInRedemption {
        let canonical = email.lowercased()
        return try redeem(code, expecting: [.signIn], visitor: visitor, now: now) { db, record in
            let owner = try Self.account(db, email: canonical)
            let linking = try uid.flatMap { try Self.account(db, uid: $0) }
            let (account, isNew) = try RedemptionRules.emailLinkSignIn(
                record, email: canonical, owner: owner, linking: linking, linkingGone: uid != nil && linking == nil, newUID: newUID,
                now: now)
            if isNew { try Self.insert(db, account) } else { try Self.update(db, account, now: now) }
            return SignInRedemption(account: account, isNewUser: isNew)
        }
    }

    /// Consumes a code at most once and runs `effect` in the same transaction.
    ///
    /// One conditional `UPDATE … WHERE redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > now`
    /// decides the single winner: on PostgreSQL a concurrent redemption of the same code (any process, any host)
    /// waits for the row's lock, then fails to serialize (40001) and runs again, when the code is no longer live.
    /// The code's family (same email and action) is superseded, so no older link stays usable. If `effect` throws,
    /// nothing is consumed. Every outcome is recorded with the visitor.
    ///
    /// The transaction body may run more than once (PostgreSQL): it only touches the ledger and `codeID`.
    private func redeem<T>(
        _ spelling: CodeSpelling, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date, effect: (Session, CodeRecord) throws -> T
    ) throws -> T {
        let at = now.milliseconds
        let hash = spelling.ledgerKey
        var codeID: Int64?
        do {
            return try writeDurably { db in
                codeID = nil
                let claimed = try db.fetchOne(
                    """
                    UPDATE action_codes SET redeemed_at = :now, redeemed_with = :spelling
                    WHERE code_hash = :hash AND redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > :now
                    RETURNING id
                    """, ["now": at, "hash": hash, "spelling": spelling.name])
                let record = try claimed.flatMap { _ in try Self.code(db, ledgerKey: hash) }
                guard let record, kinds.contains(record.kind) else {
                    let existing = try Self.code(db, ledgerKey: hash)
                    codeID = existing?.id
                    throw CodeRecord.refusal(existing, at: Date(milliseconds: at), expecting: kinds)
                }
                codeID = record.id
                try db.execute(CodeFamily.supersede, ["now": at, "email": record.email, "action": record.kind.rawValue, "id": record.id])
                let result = try effect(db, record)
                try Self.insertEvent(db, codeID: record.id, kind: .redeemed, visitor: visitor, detail: nil, at: at)
                try emitWebhook(db, .redeemed, codeID: record.id, at: at, extra: WebhookPayloads.visitorJSON(visitor))
                return result
            }
        } catch let error as HeraldError {
            try recordLinkEvent(codeID: codeID, kind: .rejected, visitor: visitor, detail: error.code.rawValue, now: now)
            throw error
        }
    }
}

import Foundation
import GRDB
import HeraldCore

/// The named redemption transactions. Each consumes the code and applies its effect (the rules on
/// `Account` in HeraldCore) in one fsynced transaction.
extension SQLiteStore {
    public func consume(_ code: String, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date) throws -> CodeRecord {
        try redeem(code, expecting: kinds, visitor: visitor, now: now) { _, record in record }
    }

    public func redeemVerification(_ code: String, visitor: Visitor, now: Date) throws -> (account: Account, code: CodeRecord) {
        try redeem(code, expecting: [.verifyEmail, .verifyAndChangeEmail, .recoverEmail], visitor: visitor, now: now) { db, record in
            if record.kind == .recoverEmail {
                // Only the account the change moved to `newEmail`, still there, that started at `email`.
                guard var account = try record.newEmail.flatMap({ try Self.account(db, email: $0) }),
                    account.initialEmail == record.email, account.existed(before: record)
                else { throw HeraldError(.invalidOOBCode, "") }
                try account.applyRecovery(record, now: now)
                try Self.update(db, account, now: now)  // EMAIL_EXISTS when another account took the address meanwhile
                return (account, record)
            }
            guard var account = try Self.account(db, email: record.email) else { throw HeraldError(.emailNotFound, "") }
            guard account.existed(before: record) else { throw HeraldError(.invalidOOBCode, "") }
            try account.applyVerification(record, now: now)
            try Self.update(db, account, now: now)
            return (account, record)
        }
    }

    public func redeemPasswordReset(_ code: String, passwordHash: String, visitor: Visitor, now: Date) throws -> Account {
        try redeem(code, expecting: [.resetPassword], visitor: visitor, now: now) { db, record in
            guard var account = try Self.account(db, email: record.email) else { throw HeraldError(.emailNotFound, "") }
            guard account.existed(before: record) else { throw HeraldError(.invalidOOBCode, "") }
            try account.applyPasswordReset(passwordHash: passwordHash, now: now)
            try Self.update(db, account, now: now)
            return account
        }
    }

    public func redeemEmailLinkSignIn(
        _ code: String, email: String, linkingTo uid: String?, newUID: String, visitor: Visitor, now: Date
    ) throws -> SignInRedemption {
        let canonical = email.lowercased()
        return try redeem(code, expecting: [.signIn], visitor: visitor, now: now) { db, record in
            guard record.email == canonical else {
                throw HeraldError(.invalidEmail, "The email provided does not match the sign-in email address.")
            }
            let owner = try Self.account(db, email: canonical)
            var account: Account
            var isNew = false
            if let uid {
                // The ID token's account went away since it was checked: linking must not fall back to another account.
                guard var target = try Self.account(db, uid: uid) else { throw HeraldError(.userNotFound, "") }
                if let owner, owner.uid != target.uid { throw HeraldError(.emailExists, "") }
                target.email = canonical
                try target.applyEmailLinkSignIn(now: now, ownsAddress: false)
                account = target
            } else if let owner {
                account = owner
                try account.applyEmailLinkSignIn(now: now, ownsAddress: true)
            } else {
                isNew = true
                account = Account(uid: newUID, email: canonical, validSince: now.milliseconds - 1000, createdAt: now)
                try account.applyEmailLinkSignIn(now: now, ownsAddress: false)
            }
            if isNew { try Self.insert(db, account) } else { try Self.update(db, account, now: now) }
            return SignInRedemption(account: account, isNewUser: isNew)
        }
    }

    /// Consumes a code at most once and runs `effect` in the same transaction.
    ///
    /// One conditional `UPDATE … WHERE redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > now`
    /// decides the single winner. The code's family (same email and action) is superseded, so no older
    /// link stays usable. If `effect` throws, nothing is consumed. Every outcome is recorded with the visitor.
    private func redeem<T>(
        _ plaintext: String, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date, effect: (Database, CodeRecord) throws -> T
    ) throws -> T {
        let at = now.milliseconds
        var codeID: Int64?
        do {
            return try writeDurably { db in
                let claimed = try Row.fetchOne(
                    db,
                    sql: """
                        UPDATE action_codes SET redeemed_at = :now
                        WHERE code_hash = :hash AND redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > :now
                        RETURNING id
                        """, arguments: ["now": at, "hash": Data(ActionCode.ledgerKey(plaintext))])
                let record = try claimed.flatMap { _ in try Self.code(db, plaintext) }
                guard let record, kinds.contains(record.kind) else {
                    let existing = try Self.code(db, plaintext)
                    codeID = existing?.id
                    throw existing?.problem(at: Date(milliseconds: at), expecting: kinds) ?? HeraldError(.invalidOOBCode, "")
                }
                codeID = record.id
                try db.cachedStatement(sql: CodeFamily.supersede).execute(arguments: [
                    "now": at, "email": record.email, "action": record.kind.rawValue, "id": record.id,
                ])
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

import Foundation
import GRDB
import HeraldCore
import HeraldStore

/// Applying a redeemed code to its account: shared by the REST API and the action pages.
extension ServerContext {
    /// Applies a VERIFY_EMAIL or VERIFY_AND_CHANGE_EMAIL code.
    func applyVerification(code: String, visitor: Visitor) throws -> (account: Account, record: CodeRecord) {
        try store.redeem(code, expecting: [.verifyEmail, .verifyAndChangeEmail], visitor: visitor) { db, record in
            guard var account = try HeraldStore.account(db, email: record.email) else { throw HeraldError(.emailNotFound, "") }
            guard !account.disabled else { throw HeraldError(.userDisabled, "") }
            if record.kind == .verifyAndChangeEmail, let newEmail = record.newEmail {
                account.email = newEmail
                account.validSince = Date().milliseconds  // the old address's sessions end
            }
            account.emailVerified = true
            try HeraldStore.update(db, account)
            return (account, record)
        }
    }

    /// Consumes a PASSWORD_RESET code and sets the new password; earlier sessions end.
    func applyPasswordReset(code: String, newPassword: String, visitor: Visitor) throws -> Account {
        try PasswordHasher.checkStrength(newPassword)
        // Refuse unusable codes before the deliberately slow hash (redeem checks again, atomically).
        let record = try store.code(code)
        let problem = record == nil ? HeraldError(.invalidOOBCode, "") : record!.problem(at: Date(), expecting: [.resetPassword])
        if let problem {
            try store.recordLinkEvent(codeID: record?.id, kind: "rejected", visitor: visitor, detail: problem.code.rawValue)
            throw problem
        }
        let hash = try PasswordHasher.hash(newPassword)  // slow on purpose: outside the write transaction
        return try store.redeem(code, expecting: [.resetPassword], visitor: visitor) { db, record in
            guard var account = try HeraldStore.account(db, email: record.email) else { throw HeraldError(.emailNotFound, "") }
            guard !account.disabled else { throw HeraldError(.userDisabled, "") }
            account.passwordHash = hash
            account.emailVerified = true
            account.validSince = Date().milliseconds
            if !account.providers.contains("password") { account.providers.append("password") }
            try HeraldStore.update(db, account)
            return account
        }
    }

    /// Consumes an EMAIL_SIGNIN code for `email`, creating the account if needed, or linking the
    /// email to `linkTo` (the idToken's account).
    func applyEmailLinkSignIn(email: String, code: String, linkTo: Account?, visitor: Visitor) throws -> (account: Account, isNew: Bool) {
        let canonical = email.lowercased()
        return try store.redeem(code, expecting: [.signIn], visitor: visitor) { db, record in
            guard record.email == canonical else {
                throw HeraldError(.invalidEmail, "The email provided does not match the sign-in email address.")
            }
            let now = Date()
            var isNew = false
            var account: Account
            if let target = try linkTo.flatMap({ try HeraldStore.account(db, uid: $0.uid) }) {
                if let owner = try HeraldStore.account(db, email: canonical), owner.uid != target.uid {
                    throw HeraldError(.emailExists, "")
                }
                account = target
                account.email = canonical
            } else if let existing = try HeraldStore.account(db, email: canonical) {
                account = existing
                if !existing.emailVerified && existing.passwordHash != nil {
                    // Whoever set that password never proved they own the address: drop it and its sessions.
                    account.passwordHash = nil
                    account.validSince = now.milliseconds
                }
            } else {
                isNew = true
                account = Account(uid: ServerContext.newUID(), email: canonical, validSince: now.milliseconds - 1000, createdAt: now)
            }
            guard !account.disabled else { throw HeraldError(.userDisabled, "") }
            account.emailVerified = true
            account.emailLinkSignin = true
            account.lastLoginAt = now
            if !account.providers.contains("password") { account.providers.append("password") }
            if isNew { try HeraldStore.insert(db, account) } else { try HeraldStore.update(db, account) }
            return (account, isNew)
        }
    }
}

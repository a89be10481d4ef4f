import Foundation

/// Which account a redeemed code speaks for and what its redemption does to it: the rules every ledger applies
/// inside its redemption transaction, written once beside `IdpDecision`. The ledger reads the accounts these
/// name, calls the rule, and writes the account it returns.
public enum RedemptionRules {
    /// The address whose account a verification or recovery code speaks for: a RECOVER_EMAIL code's account is
    /// the one its change moved to `newEmail`; every other code's is the one at its `email`.
    public static func address(of code: CodeRecord) -> String? {
        code.kind == .recoverEmail ? code.newEmail : code.email
    }

    /// A verification (VERIFY_EMAIL, VERIFY_AND_CHANGE_EMAIL) or recovery (RECOVER_EMAIL) applied to `holder`, the
    /// account at `address(of: code)`.
    ///
    /// - Throws: `EMAIL_NOT_FOUND` when nobody has the address; `INVALID_OOB_CODE` when its account came after the
    ///   code (or, recovering, is not the account the change moved); `USER_DISABLED`.
    public static func verify(_ code: CodeRecord, holder: Account?, now: Date) throws -> Account {
        if code.kind == .recoverEmail {
            // Only the account the change moved to `newEmail`, still there, that started at `email`.
            guard var account = holder, account.initialEmail == code.email, account.existed(before: code) else {
                throw HeraldError(.invalidOOBCode, "")
            }
            try account.applyRecovery(code, now: now)
            return account
        }
        var account = try spokenFor(code, holder: holder)
        try account.applyVerification(code, now: now)
        return account
    }

    /// A password reset applied to `holder`, the account at the code's `email`.
    ///
    /// - Throws: `EMAIL_NOT_FOUND`, `INVALID_OOB_CODE` (an account newer than the code), `USER_DISABLED`.
    public static func resetPassword(_ code: CodeRecord, holder: Account?, passwordHash: String, now: Date) throws -> Account {
        var account = try spokenFor(code, holder: holder)
        try account.applyPasswordReset(passwordHash: passwordHash, now: now)
        return account
    }

    /// An email-link sign-in at `email` (lower-cased): into `linking` (the signed-in account asking, when the
    /// request carried an ID token; `linkingGone` when its account went away since the token was checked), else
    /// into `owner` (the address's account), else into a new account `newUID`.
    ///
    /// - Throws: `INVALID_EMAIL` when `email` is not the code's; `USER_NOT_FOUND` when the linking account is gone
    ///   (linking never falls back to another account); `EMAIL_EXISTS` when another account has the address;
    ///   `USER_DISABLED`.
    public static func emailLinkSignIn(
        _ code: CodeRecord, email: String, owner: Account?, linking: Account?, linkingGone: Bool, newUID: String, now: Date
    ) throws -> (account: Account, isNew: Bool) {
        guard code.email == email else {
            throw HeraldError(.invalidEmail, "The email provided does not match the sign-in email address.")
        }
        if linkingGone { throw HeraldError(.userNotFound, "") }
        if var target = linking {
            if let owner, owner.uid != target.uid { throw HeraldError(.emailExists, "") }
            target.email = email
            try target.applyEmailLinkSignIn(now: now, ownsAddress: false)
            return (target, false)
        }
        if var account = owner {
            try account.applyEmailLinkSignIn(now: now, ownsAddress: true)
            return (account, false)
        }
        var account = Account(uid: newUID, email: email, validSince: now.milliseconds - 1000, createdAt: now)
        try account.applyEmailLinkSignIn(now: now, ownsAddress: false)
        return (account, true)
    }

    /// The account a code minted for its address speaks for: the one there, if it existed when the code was made.
    private static func spokenFor(_ code: CodeRecord, holder: Account?) throws -> Account {
        guard let account = holder else { throw HeraldError(.emailNotFound, "") }
        guard account.existed(before: code) else { throw HeraldError(.invalidOOBCode, "") }
        return account
    }
}

/// What an account's unique keys allow: the rules a ledger applies before it writes an account.
public enum AccountKeyRules {
    /// A new account may take its uid and address only if nobody has them.
    ///
    /// - Throws: `EMAIL_EXISTS` (checked first, as Firebase does), `DUPLICATE_LOCAL_ID`.
    public static func admit(_ account: Account, addressHolder: Account?, uidHolder: Account?) throws {
        if addressHolder != nil { throw HeraldError(.emailExists, "") }
        if uidHolder != nil { throw HeraldError(.duplicateLocalID, "") }
    }

    /// A changed account may keep its address only if no other account has it.
    ///
    /// - Throws: `EMAIL_EXISTS`.
    public static func keep(_ account: Account, addressHolder: Account?) throws {
        if let addressHolder, addressHolder.uid != account.uid { throw HeraldError(.emailExists, "") }
    }

    /// An account named by uid must still be there.
    ///
    /// - Throws: `USER_NOT_FOUND`.
    public static func present(_ account: Account?) throws -> Account {
        guard let account else { throw HeraldError(.userNotFound, "") }
        return account
    }
}

extension CodeRecord {
    /// A code that `redeem` could not consume: the reason as Firebase gives it, `INVALID_OOB_CODE` when the code is
    /// unknown (`record` nil).
    public static func refusal(_ record: CodeRecord?, at now: Date, expecting kinds: Set<ActionKind>) -> HeraldError {
        record?.problem(at: now, expecting: kinds) ?? HeraldError(.invalidOOBCode, "")
    }
}

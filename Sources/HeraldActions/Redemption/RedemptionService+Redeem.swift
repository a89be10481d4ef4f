import Foundation
import HeraldCore
import HeraldStore

/// What a code is for, without consuming it (inspect), or what a redemption consumed (app-owned accounts).
public struct CodeInfo: Sendable, Hashable {
    public let kind: ActionKind
    public let email: String
    public let newEmail: String?
    public let continueURL: String?
    public let campaignID: Int64?
    public let expiresAt: Date

    init(_ record: CodeRecord) {
        kind = record.kind
        email = record.email
        newEmail = record.newEmail
        continueURL = record.continueURL
        campaignID = record.campaignID
        expiresAt = record.expiresAt
    }
}

/// How a link looks when its page is opened: what it is for, or why it cannot be used.
public enum LinkCheck: Sendable, Hashable {
    case usable(CodeInfo)
    case invalid
    case used
    case expired
}

/// Redeeming codes: verify, consume, supersede siblings and apply the effect, each in one named
/// store transaction; every outcome is recorded with the visitor.
extension RedemptionService {
    /// What a usable code is for, without consuming it.
    ///
    /// - Throws: `MISSING_OOB_CODE`, `INVALID_OOB_CODE` (recorded as a rejected attempt), `EXPIRED_OOB_CODE`.
    public func inspect(code: String?, visitor: Visitor, now: Date = Date()) throws -> CodeInfo {
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        guard let record = try store.code(code) else {
            let detail = HeraldError.Code.invalidOOBCode.rawValue
            try store.recordLinkEvent(codeID: nil, kind: .rejected, visitor: screened(visitor, now: now), detail: detail, now: now)
            chargeBadCode(visitor, now: now)
            throw unknownCodeRefusal(code)
        }
        if let problem = record.problem(at: now, expecting: Set(ActionKind.allCases)) { throw problem }
        return CodeInfo(record)
    }

    /// A page view of a link: recorded as a click (never consumes), and what the page should show.
    public func click(code: String, kind: ActionKind, visitor: Visitor, now: Date = Date()) throws -> LinkCheck {
        let record = try store.code(code)
        try store.recordLinkEvent(codeID: record?.id, kind: .click, visitor: screened(visitor, now: now), detail: nil, now: now)
        guard let record, record.kind == kind else {
            chargeBadCode(visitor, now: now)
            return record == nil && wasPruned(code) ? .expired : .invalid
        }
        if record.redeemedAt != nil { return .used }
        if record.supersededAt != nil { return .invalid }
        return record.expiresAt <= now ? .expired : .usable(CodeInfo(record))
    }

    /// Records a refused form post (a forged or missing CSRF token) against the code it named.
    public func recordRejected(code: String, visitor: Visitor, reason: String, now: Date = Date()) throws {
        let codeID = try store.code(code)?.id
        try store.recordLinkEvent(codeID: codeID, kind: .rejected, visitor: screened(visitor, now: now), detail: reason, now: now)
        if codeID == nil { chargeBadCode(visitor, now: now) }
    }

    /// Applies a VERIFY_EMAIL or VERIFY_AND_CHANGE_EMAIL code (the address is verified, and changed), or a
    /// RECOVER_EMAIL code (the address an email change replaced comes back, and every session ends).
    ///
    /// - Throws: `MISSING_OOB_CODE`, `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `EMAIL_NOT_FOUND`, `USER_DISABLED`, `EMAIL_EXISTS`.
    public func applyVerification(code: String?, visitor: Visitor, now: Date = Date()) throws -> (account: Account, code: CodeInfo) {
        try requireAccountOwnership("applying a verification code")
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        return try applyVerification(.link(code), visitor: visitor, now: now)
    }

    func applyVerification(_ code: CodeSpelling, visitor: Visitor, now: Date) throws -> (account: Account, code: CodeInfo) {
        let (account, record) = try checkingCode(code, visitor, now: now) { try store.redeemVerification(code, visitor: $0, now: now) }
        forget(code)
        return (account, CodeInfo(record))
    }

    /// A used link leaves the emulator's listing.
    private func forget(_ code: CodeSpelling) {
        if case .link(let plaintext) = code { codes.forgetEmulatorCode(plaintext) }
    }

    /// Consumes a PASSWORD_RESET code and sets the new password; earlier sessions end.
    ///
    /// - Throws: `MISSING_OOB_CODE`, `WEAK_PASSWORD`, `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `EMAIL_NOT_FOUND`, `USER_DISABLED`.
    public func resetPassword(code: String?, newPassword: String, visitor: Visitor, now: Date = Date()) throws -> Account {
        try requireAccountOwnership("resetting a password")
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        try PasswordHasher.checkStrength(newPassword)
        // Refuse unusable codes before the deliberately slow hash (the redemption checks again, atomically).
        let record = try store.code(code)
        if let problem = record == nil ? unknownCodeRefusal(code) : record!.problem(at: now, expecting: [.resetPassword]) {
            let detail = problem.code.rawValue
            try store.recordLinkEvent(codeID: record?.id, kind: .rejected, visitor: screened(visitor, now: now), detail: detail, now: now)
            if record == nil { chargeBadCode(visitor, now: now) }
            ActionMetrics.redemption(refusedWith: problem)
            throw problem
        }
        return try setPassword(.link(code), newPassword: newPassword, visitor: visitor, now: now)
    }

    /// Hashes the new password (slowly) and redeems the reset code with it.
    func setPassword(_ code: CodeSpelling, newPassword: String, visitor: Visitor, now: Date) throws -> Account {
        let hash = try PasswordHasher.hash(newPassword)
        // Sessions end as the reset commits, after the slow hash: a sign-in racing it is ended too.
        let account = try checkingCode(code, visitor, now: now) {
            try store.redeemPasswordReset(code, passwordHash: hash, visitor: $0, now: max(now, Date()))
        }
        forget(code)
        return account
    }

    /// Consumes an EMAIL_SIGNIN code for `email` and signs in, creating the account if new, or links
    /// the address to the ID token's account.
    ///
    /// - Throws: `MISSING_EMAIL`, `MISSING_OOB_CODE`, `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `INVALID_EMAIL`,
    ///   `EMAIL_EXISTS`, `USER_DISABLED`, and the ID token's errors.
    public func signInWithEmailLink(
        email: String?, code: String?, idToken: String?, visitor: Visitor, now: Date = Date()
    ) async throws -> (session: Session, isNewUser: Bool) {
        try requireAccountOwnership("signInWithEmailLink")
        let linkTo: Account? = if let idToken { try await sessions.account(forIDToken: idToken) } else { nil }
        guard let email, !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        return try await signIn(.link(code), email: email, linkTo: linkTo, visitor: visitor, now: now)
    }

    func signIn(
        _ code: CodeSpelling, email: String, linkTo: Account?, visitor: Visitor, now: Date
    ) async throws -> (session: Session, isNewUser: Bool) {
        let store = store
        let redemption = try await offload {
            try self.checkingCode(code, visitor, now: now) {
                try store.redeemEmailLinkSignIn(code, email: email, linkingTo: linkTo?.uid, newUID: Account.newUID(), visitor: $0, now: now)
            }
        }
        forget(code)
        return (try await sessions.session(for: redemption.account), redemption.isNewUser)
    }

    /// Consumes a code for the app that owns the accounts (`accounts.owner: app`) and records the
    /// redemption in the ledger exactly as Herald's own are; the app applies the effect.
    ///
    /// - Throws: `OPERATION_NOT_ALLOWED` when Herald owns the accounts (its redemptions apply the
    ///   effect), `MISSING_OOB_CODE`, `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`.
    public func redeemForApp(code: String?, visitor: Visitor, now: Date = Date()) throws -> CodeInfo {
        guard !ownsAccounts else {
            throw HeraldError(
                .operationNotAllowed,
                "Herald owns the accounts (accounts.owner: herald): redeem with accounts:update, accounts:resetPassword or "
                    + "accounts:signInWithEmailLink, which apply the effect")
        }
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        return try consumeForApp(.link(code), expecting: Set(ActionKind.allCases), visitor: visitor, now: now)
    }

    func consumeForApp(_ code: CodeSpelling, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date) throws -> CodeInfo {
        let record = try checkingCode(code, visitor, now: now) { try store.consume(code, expecting: kinds, visitor: $0, now: now) }
        forget(code)
        return CodeInfo(record)
    }

    /// An HMAC of the code under the server key: binds an action page's form to its code (CSRF).
    public func formToken(for code: String) -> String { forms.sign("csrf:" + code) }
}

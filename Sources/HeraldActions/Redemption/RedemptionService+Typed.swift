import Foundation
import HeraldCore
import HeraldStore

/// What redeeming a typed code did, by action: the same answers as the link's redemption.
public enum TypedCodeOutcome: Sendable {
    /// `EMAIL_SIGNIN`: signed in, as `signInWithEmailLink` does.
    case signedIn(session: Session, isNewUser: Bool)
    /// `VERIFY_EMAIL`, `VERIFY_AND_CHANGE_EMAIL`: the address is verified (and changed).
    case verified(account: Account, code: CodeInfo)
    /// `PASSWORD_RESET`: the new password is set.
    case passwordReset(account: Account)
    /// Any action when the app owns the accounts: the code is spent, the app applies the effect.
    case redeemedForApp(CodeInfo)
}

/// Codes typed instead of clicked (`policy.typedCodes`). A typed code is another spelling of its mail's ledger code:
/// it finds the newest live code of its address and action that was mailed with one, and redeeming it consumes that
/// code, link and all, through the same transaction a link's redemption runs.
///
/// Guessing is bounded three ways: `policy.typedCodeTries` wrong tries kill a code (its link stays good); wrong codes
/// count against the address (`limits.signInFailuresPerAccount`) and the client network
/// (`limits.ipSignInFailuresPerHour`) with failed password sign-ins, past which the answer is
/// `TOO_MANY_ATTEMPTS_TRY_LATER` before any code is checked; and only the newest mail's code is ever a candidate.
extension RedemptionService {
    /// Redeems the code typed for `email` and `kind`, with the new password of a reset and, when its request was
    /// bound to one, the app's session id.
    ///
    /// - Throws: `MISSING_EMAIL`, `MISSING_OOB_CODE`, `INVALID_OOB_CODE` (no such code, a wrong one, one killed by
    ///   wrong tries, one used, another client's), `EXPIRED_OOB_CODE`, `TOO_MANY_ATTEMPTS_TRY_LATER`,
    ///   `WEAK_PASSWORD`, `OPERATION_NOT_ALLOWED` (typed codes are off), and the redemption's own errors.
    public func redeemTypedCode(
        _ kind: ActionKind, email: String?, code: String?, newPassword: String? = nil, sessionId: String? = nil,
        visitor: Visitor, now: Date = Date()
    ) async throws -> TypedCodeOutcome {
        guard let typedCodes, kind.takesTypedCode else {
            throw HeraldError(.operationNotAllowed, "typed codes are off (policy.typedCodes)")
        }
        guard let email, !email.isEmpty else { throw HeraldError(.missingEmail, "") }
        guard let code, !code.isEmpty else { throw HeraldError(.missingOOBCode, "") }
        let address = email.lowercased()
        if kind == .resetPassword, ownsAccounts {
            guard let newPassword else { throw HeraldError(.missingPassword, "") }
            try PasswordHasher.checkStrength(newPassword)
        }
        let spelling = try await offload {
            try self.checkTyped(code, kind: kind, email: address, sessionId: sessionId, key: typedCodes, visitor: visitor, now: now)
        }
        guard ownsAccounts else { return .redeemedForApp(try consumeForApp(spelling, expecting: [kind], visitor: visitor, now: now)) }
        switch kind {
        case .signIn:
            let (session, isNewUser) = try await signIn(spelling, email: address, linkTo: nil, visitor: visitor, now: now)
            return .signedIn(session: session, isNewUser: isNewUser)
        case .resetPassword:
            let account = try await offload { try self.setPassword(spelling, newPassword: newPassword ?? "", visitor: visitor, now: now) }
            return .passwordReset(account: account)
        case .verifyEmail, .verifyAndChangeEmail, .recoverEmail:
            let (account, info) = try await offload { try self.applyVerification(spelling, visitor: visitor, now: now) }
            return .verified(account: account, code: info)
        }
    }

    /// The ledger code `typed` names, once the guessing limits, the code's state, its session and its hash allow.
    private func checkTyped(
        _ typed: String, kind: ActionKind, email: String, sessionId: String?, key: TypedCodeKey, visitor: Visitor, now: Date
    ) throws -> CodeSpelling {
        if !typedFailures.account.allows(email, now: now) {
            throw refusals.refused(
                LimitRefusal(counter: "typed-code-account", key: EmailAddress.ledgerKey(email), error: Self.tooManyWrongCodes), now: now)
        }
        if let ip = visitor.ip, !typedFailures.client.allows(ip, now: now) {
            throw refusals.refused(LimitRefusal(counter: "typed-code-ip", key: IPNetwork.ledgerKey(ip), error: Self.tooManyWrongCodes), now: now)
        }
        func chargeFailure() {
            _ = typedFailures.account.take(email, now: now)
            if let ip = visitor.ip { _ = typedFailures.client.take(ip, now: now) }
        }
        func refuse(_ error: HeraldError, codeID: Int64?, counts: Bool) throws -> Never {
            try store.recordLinkEvent(codeID: codeID, kind: .rejected, visitor: screened(visitor, now: now), detail: error.code.rawValue, now: now)
            if counts { chargeFailure() }
            ActionMetrics.redemption(refusedWith: error)
            throw error
        }
        guard let target = try store.typedCodeTarget(email: email, kinds: [kind]) else {
            try refuse(HeraldError(.invalidOOBCode, "no code to type was mailed to this address for this action"), codeID: nil, counts: true)
        }
        if target.spent || target.tries >= typedCodeTries {
            try refuse(HeraldError(.invalidOOBCode, "this code is no longer valid: ask for a new email"), codeID: target.codeID, counts: true)
        }
        if target.expiresAt <= now { try refuse(HeraldError(.expiredOOBCode, ""), codeID: target.codeID, counts: false) }
        if let bound = target.session, !Secret.equal(bound, Hex.sha256(sessionId ?? "")) {
            try refuse(
                HeraldError(.invalidOOBCode, "this code can only be entered in the app that asked for it"), codeID: target.codeID,
                counts: true)
        }
        guard key.matches(typed, stored: target.typedHash, codeKey: target.codeKey) else {
            let tries = try store.recordWrongTypedCode(target, visitor: screened(visitor, now: now), now: now)
            chargeFailure()
            let error =
                tries >= typedCodeTries
                ? HeraldError(.invalidOOBCode, "wrong code, and too many wrong tries: ask for a new email")
                : HeraldError(.invalidOOBCode, "wrong code")
            ActionMetrics.redemption(refusedWith: error)
            throw error
        }
        return .typed(target)
    }

    /// Firebase's answer past the guessing limits.
    static let tooManyWrongCodes = HeraldError(.tooManyAttempts, "too many wrong codes: try again later")
}

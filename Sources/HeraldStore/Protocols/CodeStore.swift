import Foundation
import HeraldCore

/// What an email-link sign-in redemption did.
public struct SignInRedemption: Sendable {
    public let account: Account
    public let isNewUser: Bool

    public init(account: Account, isNewUser: Bool) {
        self.account = account
        self.isNewUser = isNewUser
    }
}

/// Action codes: minting, looking up, and the named redemption transactions.
///
/// Every redemption consumes the code with one conditional update (`redeemed_at IS NULL AND
/// superseded_at IS NULL AND expires_at > now`), supersedes the other live codes of the same email
/// and action, applies its effect, and records the outcome with the visitor, in one transaction.
/// If the effect throws, nothing is consumed; a refusal is recorded as a `rejected` link event.
public protocol CodeStore: Sendable {
    /// Mints a code not tied to an email (admin `returnOobLink`, emulator mode); only its hash is stored.
    func mintCode(
        _ kind: ActionKind, email: String, newEmail: String?, continueURL: String?, lifetime: TimeInterval, now: Date
    ) throws -> ActionCode

    /// The stored record of a code, looked up by the code's hash.
    func code(_ plaintext: String) throws -> CodeRecord?

    /// The newest creation time of a code that message retention deleted; nil when none was.
    func prunedCodesThrough() throws -> Date?

    /// Records a page view, a redemption or a rejected attempt of a link.
    func recordLinkEvent(codeID: Int64?, kind: LinkEventKind, visitor: Visitor, detail: String?, now: Date) throws

    /// Consumes a code of one of `kinds` without touching any account (accounts owned by the app).
    ///
    /// - Throws: `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`.
    func consume(_ code: CodeSpelling, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date) throws -> CodeRecord

    /// Consumes a VERIFY_EMAIL or VERIFY_AND_CHANGE_EMAIL code and applies `Account.applyVerification`, or a
    /// RECOVER_EMAIL code and applies `Account.applyRecovery` to the account the email change moved.
    ///
    /// - Throws: `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `EMAIL_NOT_FOUND`, `USER_DISABLED`, `EMAIL_EXISTS`.
    func redeemVerification(_ code: CodeSpelling, visitor: Visitor, now: Date) throws -> (account: Account, code: CodeRecord)

    /// Consumes a PASSWORD_RESET code and applies `Account.applyPasswordReset` with an already computed hash.
    ///
    /// - Throws: `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `EMAIL_NOT_FOUND`, `USER_DISABLED`.
    func redeemPasswordReset(_ code: CodeSpelling, passwordHash: String, visitor: Visitor, now: Date) throws -> Account

    /// Consumes an EMAIL_SIGNIN code for `email` and signs in: links the address to the account
    /// `linkingTo` when given, else signs in to the address's account, creating it (as `newUID`) if needed.
    ///
    /// - Throws: `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, `INVALID_EMAIL` (another address's code),
    ///   `EMAIL_EXISTS` (linking an address another account owns), `USER_NOT_FOUND` (no account `linkingTo`), `USER_DISABLED`.
    func redeemEmailLinkSignIn(
        _ code: CodeSpelling, email: String, linkingTo uid: String?, newUID: String, visitor: Visitor, now: Date
    ) throws -> SignInRedemption

    /// The code a typed code for `email` and one of `kinds` can only be: the newest live one of that family
    /// mailed with a typed code; nil when there is none.
    func typedCodeTarget(email: String, kinds: Set<ActionKind>) throws -> TypedCodeTarget?

    /// Counts a wrong typed code against `target`; its tries after this one.
    func recordWrongTypedCode(_ target: TypedCodeTarget, visitor: Visitor, now: Date) throws -> Int
}

/// How a redemption names its code: the link's code, or the ledger code a typed code was checked against.
public enum CodeSpelling: Sendable, Hashable {
    case link(String)
    case typed(TypedCodeTarget)

    /// The `redeemed_with` the ledger records.
    var name: String {
        switch self {
        case .link: "link"
        case .typed: "typed"
        }
    }

    var ledgerKey: Data {
        switch self {
        case .link(let plaintext): Data(ActionCode.ledgerKey(plaintext))
        case .typed(let target): Data(target.codeKey)
        }
    }
}

/// The one ledger code a typed code may match: its key (what the typed code's hash is bound to), the hash, the
/// wrong tries so far, and the session its request was bound to (SHA-256 hex), if any.
public struct TypedCodeTarget: Sendable, Hashable {
    public let codeID: Int64
    public let codeKey: [UInt8]
    public let typedHash: [UInt8]
    public let tries: Int
    public let kind: ActionKind
    public let session: String?
    public let expiresAt: Date
    /// Redeemed (by its link or typed) or superseded.
    public let spent: Bool
}

extension CodeStore {
    public func consume(_ code: String, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date) throws -> CodeRecord {
        try consume(.link(code), expecting: kinds, visitor: visitor, now: now)
    }

    public func redeemVerification(_ code: String, visitor: Visitor, now: Date) throws -> (account: Account, code: CodeRecord) {
        try redeemVerification(.link(code), visitor: visitor, now: now)
    }

    public func redeemPasswordReset(_ code: String, passwordHash: String, visitor: Visitor, now: Date) throws -> Account {
        try redeemPasswordReset(.link(code), passwordHash: passwordHash, visitor: visitor, now: now)
    }

    public func redeemEmailLinkSignIn(
        _ code: String, email: String, linkingTo uid: String?, newUID: String, visitor: Visitor, now: Date
    ) throws -> SignInRedemption {
        try redeemEmailLinkSignIn(.link(code), email: email, linkingTo: uid, newUID: newUID, visitor: visitor, now: now)
    }
}

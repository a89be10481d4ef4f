import Foundation
import HeraldCore

/// A known account's standing, as sending rules need it.
public struct AccountStanding: Sendable, Hashable {
    public let disabled: Bool
    public let emailVerified: Bool
    public let displayName: String?

    public init(disabled: Bool, emailVerified: Bool, displayName: String?) {
        self.disabled = disabled
        self.emailVerified = emailVerified
        self.displayName = displayName
    }
}

/// One account of an import, with the provider identities it comes with.
public struct ImportedAccount: Sendable, Hashable {
    public var account: Account
    public var identities: [FederatedIdentity]

    public init(account: Account, identities: [FederatedIdentity] = []) {
        self.account = account
        self.identities = identities
    }
}

/// Why the ledger could not take one account of an import: something already there holds its key.
public enum ImportConflict: Sendable, Hashable {
    /// An account has this uid, and the import does not overwrite.
    case uidExists
    /// Another account has this email.
    case emailExists
    /// Another account has one of these provider identities.
    case identityExists
    /// Another account has this phone number.
    case phoneNumberExists
}

/// Accounts, when Herald owns them (`accounts.owner: herald`).
public protocol AccountStore: Sendable {
    func account(uid: String) throws -> Account?

    /// The account with this email (case-insensitive).
    func account(email: String) throws -> Account?

    /// The account with this phone number (an import's; E.164).
    func account(phoneNumber: String) throws -> Account?

    /// The account an identity provider linked with this email (case-insensitive) belongs to; the first linked.
    func account(providerEmail email: String) throws -> Account?

    /// The standing of every listed address that has an account, keyed by lower-cased address; one query.
    func standings(emails: [String]) throws -> [String: AccountStanding]

    /// Inserts a new account.
    ///
    /// - Throws: `EMAIL_EXISTS`, `DUPLICATE_LOCAL_ID`.
    func createAccount(_ account: Account) throws

    /// Reads, changes and writes one account in one transaction, so concurrent changes never interleave.
    ///
    /// - Throws: `USER_NOT_FOUND`, `EMAIL_EXISTS` (the new email belongs to another account), or what `change` throws.
    func updateAccount(uid: String, _ change: (inout Account) throws -> Void) throws -> Account

    /// Sets only the last-login time, so a concurrent reset or revocation is never overwritten.
    func recordLogin(uid: String, at date: Date) throws

    /// Deletes an account and revokes its refresh tokens (they answer `USER_NOT_FOUND`); false when there was none.
    func deleteAccount(uid: String) throws -> Bool

    /// Stores a new refresh token (its hash).
    func createRefreshToken(_ token: RefreshTokenRecord) throws

    /// The refresh token with this hash, if one was ever issued.
    func refreshToken(hash: [UInt8]) throws -> RefreshTokenRecord?

    /// Accounts, oldest first.
    func accounts(limit: Int?) throws -> [Account]

    /// Up to `limit` accounts ordered by uid (bytewise), from the first uid after `uid`, `offset` of them skipped:
    /// pages of `accounts:batchGet` and `accounts:query`.
    func accounts(after uid: String?, offset: Int, limit: Int) throws -> [Account]

    /// How many accounts there are.
    func accountCount() throws -> Int

    /// Writes an import's accounts in one transaction: each is inserted, or (with `overwrite`) replaces the account
    /// with its uid, identities and all. An account whose uid (without `overwrite`), email, phone number or identity another
    /// account already holds is left out and named in the answer, by its index; the others are all written or,
    /// on an error, none is.
    func importAccounts(_ accounts: [ImportedAccount], overwrite: Bool, now: Date) throws -> [Int: ImportConflict]

    /// Deletes, in one transaction, each listed account that `allowed` admits, revoking its refresh tokens as
    /// `deleteAccount` does; answers the uids of accounts that exist and were refused. Unknown uids are skipped.
    func deleteAccounts(uids: [String], if allowed: (Account) -> Bool) throws -> [String]

    /// Replaces an account's password hash only while it still is `current`, and records the sign-in, in one
    /// transaction: an imported hash becoming Herald's own at the first sign-in. False when the hash had changed.
    func replacePasswordHash(uid: String, current: String, with replacement: String, loginAt: Date) throws -> Bool

    /// Signs in with a verified provider identity by Firebase's rules (`IdpDecision`), in one transaction:
    /// creates, links or takes over an account as the rule says, or changes nothing (`needConfirmation`).
    /// `linking` is the uid of a signed-in account asking to link; `trusted` whether the provider's verified
    /// emails prove the address.
    ///
    /// - Throws: `FEDERATED_USER_ID_ALREADY_LINKED`, `EMAIL_EXISTS`, `USER_DISABLED`, `USER_NOT_FOUND` (linking).
    /// The outcome is recorded in `account_events` (with the visitor's address and user agent) in the same transaction.
    func signIn(with identity: FederatedIdentity, linking: String?, trusted: Bool, visitor: Visitor, now: Date) throws -> IdpOutcome

    /// The provider identities linked to an account, oldest first.
    func identities(uid: String) throws -> [FederatedIdentity]
    /// The newest identities of one provider (emulator mode's account chooser), at most `limit`.
    func identities(provider: String, limit: Int) throws -> [FederatedIdentity]
}

extension AccountStore {
    public func accounts() throws -> [Account] { try accounts(limit: nil) }

    public func accounts(after uid: String?, limit: Int) throws -> [Account] { try accounts(after: uid, offset: 0, limit: limit) }
}

import Foundation

/// What a verified provider sign-in does, as Firebase decides it (one account per email address). A pure
/// function of what the ledger holds, so every store applies the same rule inside its own transaction.
///
/// - The identity is already linked: sign that account in.
/// - A signed-in account asks to link (`idToken`): link, unless the identity or the provider is taken, or
///   another account has the identity's email (`EMAIL_EXISTS`).
/// - No account has the identity's email: a new account with this provider.
/// - An account has the email: when the provider is trusted and vouches for the email, sign in to that
///   account and link the provider, whose profile (name, photo) replaces the account's — taking it over
///   (password dropped, sessions ended, email verified) if its own email was unverified, as Firebase does for
///   Google; otherwise `needConfirmation` (the SDKs' `account-exists-with-different-credential`): the user must
///   sign in the old way and link.
public enum IdpDecision: Sendable, Equatable {
    case signIn(uid: String)
    case create
    /// A signed-in account links the identity.
    case link(uid: String)
    /// A trusted provider vouches for the verified address of an account: link, with the provider's profile.
    case adopt(uid: String)
    case takeOver(uid: String)
    case needConfirmation(uid: String)

    /// - Parameters:
    ///   - holder: the account the identity is linked to, if any.
    ///   - linking: the signed-in account asking to link (the request's `idToken`), if any.
    ///   - byEmail: the account whose email is the identity's, if any.
    ///   - trusted: whether the provider's verified emails are taken as proof of the address.
    /// - Throws: `FEDERATED_USER_ID_ALREADY_LINKED`, `EMAIL_EXISTS`, `USER_DISABLED`.
    public static func decide(
        _ identity: FederatedIdentity, holder: Account?, linking: Account?, byEmail: Account?, trusted: Bool
    ) throws -> IdpDecision {
        if let linking {
            guard !linking.disabled else { throw HeraldError(.userDisabled, "") }
            // Firebase refuses an identity already linked, even to this very account.
            if holder != nil || linking.providers.contains(identity.providerId) {
                throw HeraldError(.federatedUserIDAlreadyLinked, "")
            }
            if let byEmail, byEmail.uid != linking.uid { throw HeraldError(.emailExists, "") }
            return .link(uid: linking.uid)
        }
        if let holder {
            guard !holder.disabled else { throw HeraldError(.userDisabled, "") }
            return .signIn(uid: holder.uid)
        }
        guard let byEmail else { return .create }
        guard trusted, identity.emailVerified else { return .needConfirmation(uid: byEmail.uid) }
        guard !byEmail.disabled else { throw HeraldError(.userDisabled, "") }
        return byEmail.emailVerified ? .adopt(uid: byEmail.uid) : .takeOver(uid: byEmail.uid)
    }
}

extension Account {
    /// A new account for a provider's user: its email as the provider vouches for it, its name and photo.
    public static func created(from identity: FederatedIdentity, uid: String = Account.newUID(), now: Date) -> Account {
        var account = Account(uid: uid, email: nil, validSince: now.milliseconds, createdAt: now)
        account.link(identity, now: now)
        return account
    }

    /// Adds a provider: its id to `providers`, and what the account lacks (email, name, photo) from it.
    public mutating func link(_ identity: FederatedIdentity, now: Date) {
        addProvider(identity.providerId)
        if email == nil, let address = identity.email {
            email = address
            emailVerified = identity.emailVerified
        } else if let address = identity.email, address == email, identity.emailVerified {
            emailVerified = true
        }
        if displayName == nil { displayName = identity.displayName }
        if photoURL == nil { photoURL = identity.photoURL }
    }

    /// A trusted provider vouches for this account's verified address: the provider is linked, the address
    /// stays verified, and the profile becomes the provider's (a name or photo it does not give is cleared).
    public mutating func adopt(_ identity: FederatedIdentity, now: Date) {
        link(identity, now: now)
        emailVerified = true
        displayName = identity.displayName
        photoURL = identity.photoURL
    }

    /// A trusted provider vouches for an address this account never proved: the provider takes the account
    /// over. The password and every other provider (which anyone could have set or linked) are dropped, every
    /// session ends, and the profile becomes the provider's.
    public mutating func takeOver(by identity: FederatedIdentity, now: Date) {
        passwordHash = nil
        providers.removeAll { $0 == "password" }
        dropUnprovenProviders(keeping: identity.providerId)
        endSessions(at: now)
        adopt(identity, now: now)
    }
}

/// What a provider sign-in did: the rule applied, and the account as it now stands (for `needConfirmation`,
/// the existing account, unchanged).
public struct IdpOutcome: Sendable, Equatable {
    public let decision: IdpDecision
    public let account: Account

    public init(decision: IdpDecision, account: Account) {
        self.decision = decision
        self.account = account
    }

    public var isNewUser: Bool { decision == .create }

    /// The `account_events` kind the ledger records for it.
    public var eventKind: String {
        switch decision {
        case .create: "idp-sign-up"
        case .signIn: "idp-sign-in"
        case .link, .adopt: "idp-link"
        case .takeOver: "idp-take-over"
        case .needConfirmation: "idp-need-confirmation"
        }
    }
    public var needsConfirmation: Bool {
        if case .needConfirmation = decision { return true }
        return false
    }
}

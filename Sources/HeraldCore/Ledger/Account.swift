import Foundation

/// A user account: the minimum the Identity Toolkit email actions need.
public struct Account: Sendable, Hashable {
    public var uid: String
    public var email: String?
    public var emailVerified: Bool
    public var passwordHash: String?
    public var displayName: String?
    public var disabled: Bool
    public var emailLinkSignin: Bool
    /// Unix milliseconds; ID tokens issued before this are no longer accepted (Firebase shows seconds).
    public var validSince: Int64
    public var createdAt: Date
    public var lastLoginAt: Date?
    public var providers: [String]
    public var photoURL: String?
    /// The address the account had before its first email change: where a RECOVER_EMAIL code leads back to.
    public var initialEmail: String?
    /// Firebase's custom claims: a JSON object as text (`customAttributes`), carried by every ID token of the account.
    public var customAttributes: String?
    /// An E.164 phone number an import brought (`phoneNumber`); kept and shown, never a way to sign in.
    public var phoneNumber: String?

    public init(
        uid: String, email: String?, emailVerified: Bool = false, passwordHash: String? = nil, displayName: String? = nil,
        disabled: Bool = false, emailLinkSignin: Bool = false, validSince: Int64, createdAt: Date, lastLoginAt: Date? = nil,
        providers: [String] = [], photoURL: String? = nil, initialEmail: String? = nil, customAttributes: String? = nil,
        phoneNumber: String? = nil
    ) {
        self.uid = uid
        self.email = email
        self.emailVerified = emailVerified
        self.passwordHash = passwordHash
        self.displayName = displayName
        self.disabled = disabled
        self.emailLinkSignin = emailLinkSignin
        self.validSince = validSince
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.providers = providers
        self.photoURL = photoURL
        self.initialEmail = initialEmail
        self.customAttributes = customAttributes
        self.phoneNumber = phoneNumber
    }

    /// A new Firebase-style uid: 28 characters from the CSPRNG.
    public static func newUID() -> String {
        String(ActionCode.generate().plaintext.filter { $0.isLetter || $0.isNumber }.prefix(28))
    }

    /// Adds `provider` to the sign-in providers once.
    public mutating func addProvider(_ provider: String) {
        if !providers.contains(provider) { providers.append(provider) }
    }
}

/// What each redemption does to an account: the rules every store implementation applies inside
/// its named redemption transaction, written once.
extension Account {
    /// VERIFY_EMAIL marks the address verified; VERIFY_AND_CHANGE_EMAIL also moves the account to
    /// the new address and ends the old address's sessions.
    ///
    /// - Throws: `USER_DISABLED`.
    public mutating func applyVerification(_ code: CodeRecord, now: Date) throws {
        guard !disabled else { throw HeraldError(.userDisabled, "") }
        if code.kind == .verifyAndChangeEmail, let newEmail = code.newEmail {
            email = newEmail
            endSessions(at: now)
        }
        emailVerified = true
    }

    /// A reset sets the password, proves the address and ends every earlier session. Proving an address that was
    /// unproven also unlinks every identity provider (`dropUnprovenProviders`).
    ///
    /// - Throws: `USER_DISABLED`.
    public mutating func applyPasswordReset(passwordHash hash: String, now: Date) throws {
        guard !disabled else { throw HeraldError(.userDisabled, "") }
        if !emailVerified { dropUnprovenProviders() }
        passwordHash = hash
        emailVerified = true
        endSessions(at: now)
        addProvider("password")
    }

    /// Email-link sign-in proves the address. Signing in to the address's existing account
    /// (`ownsAddress`) while its address was unproven drops every credential someone who never proved they own it
    /// could have added — the password and the linked identity providers — and ends every earlier session.
    ///
    /// - Throws: `USER_DISABLED`.
    public mutating func applyEmailLinkSignIn(now: Date, ownsAddress: Bool) throws {
        guard !disabled else { throw HeraldError(.userDisabled, "") }
        if ownsAddress && !emailVerified {
            passwordHash = nil
            dropUnprovenProviders()
            endSessions(at: now)
        }
        emailVerified = true
        emailLinkSignin = true
        lastLoginAt = now
        addProvider("password")
    }

    /// RECOVER_EMAIL puts back the address an email change replaced, proves it (the link came to it),
    /// and ends every session, the changer's included.
    ///
    /// - Throws: `USER_DISABLED`.
    public mutating func applyRecovery(_ code: CodeRecord, now: Date) throws {
        guard !disabled else { throw HeraldError(.userDisabled, "") }
        email = code.email
        emailVerified = true
        endSessions(at: now)
    }

    /// An email change by the account's owner: the new address is unproven, earlier sessions end, and the
    /// first address is remembered for recovery.
    public mutating func changeEmail(to newEmail: String, now: Date) {
        if initialEmail == nil { initialEmail = email }
        email = newEmail
        emailVerified = false
        endSessions(at: now)
    }

    /// An address proven by its mailbox (a reset, an email-link sign-in, a trusted provider's take-over) after it
    /// was unproven: every identity provider linked meanwhile goes, since anyone could have linked their own to an
    /// account holding someone else's address; `keeping` is the provider doing the proving. The password is the
    /// caller's to drop or replace; the sign-in methods "password" and "emailLink" stay.
    public mutating func dropUnprovenProviders(keeping proving: String? = nil) {
        providers.removeAll { $0 != "password" && $0 != "emailLink" && $0 != proving }
    }

    /// Ends every session issued before `date`: ID and refresh tokens issued earlier fail. Never moves
    /// `validSince` back, so an earlier-started change cannot undo a later revocation.
    public mutating func endSessions(at date: Date) {
        validSince = max(validSince, date.milliseconds)
    }

    /// Whether the account existed when `code` was minted. A code minted for an address speaks for the
    /// account that had it then: one deleted and signed up again (by someone else) is not that account.
    public func existed(before code: CodeRecord) -> Bool {
        createdAt.milliseconds <= code.createdAt.milliseconds
    }
}

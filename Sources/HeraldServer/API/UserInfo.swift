import Foundation
import HeraldCore
import Hummingbird

/// One account as `accounts:lookup` describes it; times are strings, as Firebase writes them.
struct UserInfo: Encodable, Sendable {
    /// A sign-in provider of the account.
    struct Provider: Encodable, Sendable {
        let providerId: String
        let email: String?
        let federatedId: String
        let rawId: String
        var displayName: String?
        var photoUrl: String?
        var screenName: String?
    }

    let localId: String
    let email: String?
    /// The address before the first email change.
    let initialEmail: String?
    let emailVerified: Bool
    let displayName: String?
    let photoUrl: String?
    /// The handle of the first linked provider that has one (Twitter's), as Firebase copies it at sign-up.
    let screenName: String?
    let disabled: Bool
    let emailLinkSignin: Bool
    /// Unix seconds.
    let validSince: String
    /// Unix milliseconds.
    let createdAt: String
    /// Unix milliseconds.
    let lastLoginAt: String?
    /// `REDACTED`, base64, when the account has a password: as production answers.
    let passwordHash: String?
    let providerUserInfo: [Provider]
    /// Custom claims, a JSON object as text.
    let customAttributes: String?
    let phoneNumber: String?

    init(_ account: Account, identities: [FederatedIdentity] = []) {
        localId = account.uid
        email = account.email
        initialEmail = account.initialEmail
        emailVerified = account.emailVerified
        displayName = account.displayName
        photoUrl = account.photoURL
        screenName = account.providers.lazy.compactMap { id in identities.first { $0.providerId == id }?.screenName }.first
        disabled = account.disabled
        emailLinkSignin = account.emailLinkSignin
        validSince = String(account.validSince / 1000)
        createdAt = Self.milliseconds(account.createdAt)
        lastLoginAt = account.lastLoginAt.map(Self.milliseconds)
        passwordHash = account.passwordHash == nil ? nil : Self.redactedPasswordHash
        providerUserInfo = Self.providers(of: account, identities: identities)
        customAttributes = account.customAttributes
        phoneNumber = account.phoneNumber
    }

    /// "REDACTED" in base64: what production shows for a password hash.
    static let redactedPasswordHash = "UkVEQUNURUQ="

    /// The account's providers: each identity provider as it knows the user, and `password` (or an email
    /// link) under the account's email; an account without an email or a provider has none (anonymous).
    static func providers(of account: Account, identities: [FederatedIdentity]) -> [Provider] {
        account.providers.compactMap { id in
            if let identity = identities.first(where: { $0.providerId == id }) {
                return Provider(
                    providerId: id, email: identity.email, federatedId: identity.rawId, rawId: identity.rawId,
                    displayName: identity.displayName, photoUrl: identity.photoURL, screenName: identity.screenName)
            }
            guard let email = account.email else { return nil }
            return Provider(providerId: id, email: email, federatedId: email, rawId: email)
        }
    }

    private static func milliseconds(_ date: Date) -> String {
        String(Int64(date.timeIntervalSince1970 * 1000))
    }
}

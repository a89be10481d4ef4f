import Foundation
import HeraldCore

/// The tokens Firebase returns with every sign-in.
public struct Session: Sendable, Hashable {
    public let idToken: String
    public let refreshToken: String
    /// Seconds the ID token lives, as Firebase writes it ("3600").
    public let expiresIn: String
    public let localId: String
    public let email: String
}

/// A new account, from `accounts:signUp` (apps) or an admin create.
public struct SignUpRequest: Sendable {
    public var email: String?
    public var password: String?
    public var displayName: String?
    public var photoURL: String?
    /// Admin only.
    public var localId: String?
    /// Admin only.
    public var emailVerified: Bool?
    /// Admin only.
    public var disabled: Bool?

    public init(
        email: String? = nil, password: String? = nil, displayName: String? = nil, photoURL: String? = nil, localId: String? = nil,
        emailVerified: Bool? = nil, disabled: Bool? = nil
    ) {
        self.photoURL = photoURL
        self.email = email
        self.password = password
        self.displayName = displayName
        self.localId = localId
        self.emailVerified = emailVerified
        self.disabled = disabled
    }
}

/// What a sign-up produced: the account, and a session when an app signed itself up.
public struct SignUpResult: Sendable {
    public let account: Account
    public let session: Session?
}

/// An administrator's changes to one account; nil leaves a field as it is.
public struct AccountEdit: Sendable {
    public var email: String?
    public var password: String?
    public var displayName: String?
    public var deleteDisplayName = false
    public var photoURL: String?
    public var deletePhotoURL = false
    public var emailVerified: Bool?
    public var disabled: Bool?
    /// Unix seconds, as text: tokens issued before stop working (`revoke_refresh_tokens`).
    public var validSince: String?
    /// Custom claims, a JSON object as text (`set_custom_user_claims`); `{}` removes them.
    public var customAttributes: String?

    public init() {}
}

/// `accounts:createAuthUri`'s answer; nil fields are hidden by enumeration protection.
public struct AuthURIResult: Sendable {
    public let sessionId: String
    public let registered: Bool?
    public let allProviders: [String]?
    public let signinMethods: [String]?
}

/// A signed-in user's changes to their own account (`accounts:update` with an ID token); nil leaves a field.
public struct ProfileEdit: Sendable {
    public var email: String?
    public var password: String?
    public var displayName: String?
    public var photoURL: String?
    /// `DISPLAY_NAME`, `PHOTO_URL`, `PASSWORD`.
    public var deleteAttributes: Set<String> = []
    /// Providers to unlink (Firebase's `deleteProvider`): an identity provider's id removes that provider;
    /// `password` removes the password, the email-link method and the email itself. Unknown ids are ignored.
    public var deleteProviders: Set<String> = []
    /// Sign in again with the result even when nothing ended the session.
    public var returnSecureToken = false
    /// End every session (the user's "sign out everywhere"; `validSince` sent with an ID token). Only the
    /// current time counts, whatever value was sent.
    public var endSessions = false
    /// The language of the recovery email an email change sends.
    public var locale: String?

    public init() {}
}

/// What an own-account update did: the account, and a new session when the old one ended or one was asked for.
public struct ProfileUpdate: Sendable {
    public let account: Account
    public let session: Session?
}

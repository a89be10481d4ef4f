import Foundation
import GRDB

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

    public init(
        uid: String, email: String?, emailVerified: Bool = false, passwordHash: String? = nil, displayName: String? = nil,
        disabled: Bool = false, emailLinkSignin: Bool = false, validSince: Int64, createdAt: Date, lastLoginAt: Date? = nil,
        providers: [String] = []
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
    }

    init(row: Row) {
        uid = row["uid"]
        email = row["email"]
        emailVerified = row["email_verified"]
        passwordHash = row["password_hash"]
        displayName = row["display_name"]
        disabled = row["disabled"]
        emailLinkSignin = row["email_link_signin"]
        validSince = row["valid_since"]
        createdAt = Date(milliseconds: row["created_at"])
        lastLoginAt = (row["last_login_at"] as Int64?).map(Date.init(milliseconds:))
        providers = (try? JSONDecoder().decode([String].self, from: Data((row["providers"] as String).utf8))) ?? []
    }

    var arguments: StatementArguments {
        let providerJSON = String(decoding: (try? JSONEncoder().encode(providers)) ?? Data("[]".utf8), as: UTF8.self)
        return [
            "uid": uid, "email": email, "email_verified": emailVerified, "password_hash": passwordHash,
            "display_name": displayName, "disabled": disabled, "email_link_signin": emailLinkSignin,
            "valid_since": validSince, "created_at": createdAt.milliseconds, "last_login_at": lastLoginAt?.milliseconds,
            "providers": providerJSON,
        ]
    }
}

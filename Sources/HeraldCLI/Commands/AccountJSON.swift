import HeraldCore

/// An account in `herald accounts list --json`: every key present, `null` where the account has no value; never the hash.
struct AccountJSON: Encodable {
    enum CodingKeys: String, CodingKey {
        case uid, email, emailVerified, displayName, disabled, hasPassword, emailLinkSignin, createdAt, lastLoginAt
    }

    let account: Account

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(account.uid, forKey: .uid)
        try container.encode(account.email, forKey: .email)
        try container.encode(account.emailVerified, forKey: .emailVerified)
        try container.encode(account.displayName, forKey: .displayName)
        try container.encode(account.disabled, forKey: .disabled)
        try container.encode(account.passwordHash != nil, forKey: .hasPassword)
        try container.encode(account.emailLinkSignin, forKey: .emailLinkSignin)
        try container.encode(account.createdAt.iso8601, forKey: .createdAt)
        try container.encode(account.lastLoginAt?.iso8601, forKey: .lastLoginAt)
    }
}

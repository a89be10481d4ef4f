import Foundation

/// A validated request to send one action email: what the outbox stores.
public struct ActionRequest: Sendable, Hashable {
    public var kind: ActionKind
    public var email: EmailAddress
    public var newEmail: EmailAddress?
    public var settings: ActionCodeSettings
    public var locale: LocaleTag
    public var displayName: String?
    /// The mailbox the per-recipient limits count `recipient` under (`RecipientAliases.key`).
    public var recipientKey: String

    /// Validates every part; throws the first problem as a `HeraldError`.
    public init(
        kind: ActionKind,
        email: String,
        newEmail: String? = nil,
        settings: ActionCodeSettings = ActionCodeSettings(),
        locale: String? = nil,
        displayName: String? = nil,
        links: HeraldConfiguration.Links,
        aliases: RecipientAliases = .standard
    ) throws {
        self.kind = kind
        self.email = try EmailAddress(email)
        switch (kind, newEmail) {
        case (.verifyAndChangeEmail, nil), (.recoverEmail, nil):
            throw HeraldError(.missingNewEmail, "\(kind.rawValue) needs the new email address")
        case (.verifyAndChangeEmail, let newEmail?), (.recoverEmail, let newEmail?):
            self.newEmail = try EmailAddress(newEmail, code: .invalidNewEmail)
        case (_, nil):
            self.newEmail = nil
        case (_, .some):
            throw HeraldError(.argumentError, "a new email address only applies to verify-and-change-email")
        }
        try settings.validate(for: kind, authorizedDomains: links.authorizedDomains)
        self.settings = settings
        self.locale = try locale.map { try LocaleTag($0) } ?? links.defaultLocale
        self.displayName = try displayName.map(DisplayName.validate)
        recipientKey = aliases.key(kind.recipient(email: self.email, newEmail: self.newEmail))
    }

    /// The address the email goes to: the new address for verify-and-change-email. A recover-email
    /// goes to the old address (`email`); `newEmail` is the one it replaced.
    public var recipient: EmailAddress { kind.recipient(email: email, newEmail: newEmail) }
}

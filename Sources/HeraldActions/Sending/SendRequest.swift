import HeraldCore

/// A request to send one action email, as any entry point received it (not yet validated).
public struct SendRequest: Sendable {
    public var kind: ActionKind
    /// The account's address; for verification from an app, the ID token names the account instead.
    public var email: String?
    /// The new address (verify-and-change-email); the email goes there.
    public var newEmail: String?
    /// An app caller's ID token (verify-email, verify-and-change-email).
    public var idToken: String?
    public var settings: ActionCodeSettings
    public var locale: String?
    /// The recipient's name; defaults to the account's display name.
    public var displayName: String?
    /// Admin only: mint the code and return the link instead of queueing an email.
    public var returnLink: Bool
    /// The client's address as the HTTP layer determined it (`limits.trustedProxies`); nil from the CLI and campaigns.
    public var clientIP: String?
    /// The account `idToken` named, once verified (the asynchronous `send` sets it).
    var signedIn: Account?

    public init(
        kind: ActionKind, email: String? = nil, newEmail: String? = nil, idToken: String? = nil,
        settings: ActionCodeSettings = ActionCodeSettings(), locale: String? = nil, displayName: String? = nil, returnLink: Bool = false
    ) {
        self.kind = kind
        self.email = email
        self.newEmail = newEmail
        self.idToken = idToken
        self.settings = settings
        self.locale = locale
        self.displayName = displayName
        self.returnLink = returnLink
    }
}

/// What sending did. An app caller under enumeration protection cannot tell a silent refusal from a send.
public struct SendResult: Sendable {
    public enum Delivery: Sendable, Hashable {
        /// Queued as this outbox row.
        case queued(outboxID: Int64)
        /// Admin `returnOobLink`: nothing queued; the code and the link.
        case link(code: String, link: String)
        /// Emulator mode: the code is listed at `…/oobCodes`; no mail.
        case emulated
        /// Refused, but answered as sent (enumeration protection).
        case silent
    }

    /// The canonical address the request was for.
    public let email: String
    public let delivery: Delivery
}

import Crypto
import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import Hummingbird
import Logging
import Synchronization

/// What every handler needs, built once by `HeraldServer.application`.
final class ServerContext: Sendable {
    let configuration: HeraldConfiguration
    let store: HeraldStore
    let messageDomain: String
    let links: ActionLinkBuilder
    let signer: TokenSigner
    let pages: PageRenderer
    let logger: Logger
    /// Emulator mode only: plaintext codes kept in memory (never on disk) for `GET …/oobCodes`.
    let emulatorCodes = Mutex<[[String: String]]>([])
    /// Requests answered "sent" but silently not sent (enumeration protection), per recipient and action,
    /// so they are throttled exactly like real sends and the limits reveal nothing either.
    private let silentSends = Mutex<[String: [Date]]>([:])

    init(configuration: HeraldConfiguration, store: HeraldStore, composer: MessageComposer, pages: PageRenderer, logger: Logger) {
        self.configuration = configuration
        self.store = store
        messageDomain = String(composer.from.address.domain)
        links = ActionLinkBuilder(actionURL: configuration.links.actionURL, apiKey: configuration.project.apiKey)
        let secret = configuration.server.tokenSecret
        let key = secret.isEmpty ? SymmetricKey(size: .bits256) : SymmetricKey(data: SHA256.hash(data: Data(secret.utf8)))
        signer = TokenSigner(key: key, projectID: configuration.project.id)
        self.pages = pages
        self.logger = logger
    }

    /// The account an ID token belongs to, if the token is genuine, current and not revoked.
    ///
    /// - Throws: `MISSING_ID_TOKEN`, `INVALID_ID_TOKEN`, `TOKEN_EXPIRED` (also when issued before the
    ///   account's validSince), `USER_NOT_FOUND`, `USER_DISABLED`.
    func account(forIDToken token: String?) throws -> Account {
        guard let token, !token.isEmpty else { throw HeraldError(.missingIDToken, "") }
        let claims = try signer.verify(token)
        guard let account = try store.account(uid: claims.uid) else { throw HeraldError(.userNotFound, "") }
        guard claims.issuedAtMilliseconds >= account.validSince else { throw HeraldError(.tokenExpired, "") }
        guard !account.disabled else { throw HeraldError(.userDisabled, "") }
        return account
    }

    /// The fields Firebase returns with every sign-in.
    func session(for account: Account, provider: String) -> [String: Any] {
        [
            "idToken": signer.issue(uid: account.uid, email: account.email, emailVerified: account.emailVerified, provider: provider),
            "refreshToken": ActionCode.generate().plaintext, "expiresIn": "3600", "localId": account.uid,
            "email": account.email ?? "",
        ]
    }

    /// Whether the request carries the admin token (or, when allowed, `Bearer owner` from loopback).
    func isAdmin(_ request: Request, _ requestContext: HeraldRequestContext) -> Bool {
        let server = configuration.server
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else { return false }
        let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if !server.adminToken.isEmpty, Secret.equal(token, server.adminToken) { return true }
        return server.allowEmulatorOwner && token.lowercased() == "owner" && requestContext.isLoopback
    }

    /// Applies the cooldown and daily cap to a request that will not be sent.
    ///
    /// - Throws: `TOO_MANY_ATTEMPTS_TRY_LATER`, as a real send would.
    func throttleSilentSend(recipient: String, kind: ActionKind, now: Date = Date()) throws {
        let policy = configuration.policy
        try silentSends.withLock { sends in
            if sends.count > 100_000 {  // bounded memory: forget requests older than the 24 h window
                sends = sends.filter { now.timeIntervalSince($0.value.last ?? .distantPast) < 86_400 }
            }
            let key = kind.rawValue + " " + recipient
            let recent = (sends[key] ?? []).filter { now.timeIntervalSince($0) < 86_400 }
            if let latest = recent.last, now.timeIntervalSince(latest) < policy.cooldown { throw HeraldError(.tooManyAttempts, "") }
            if recent.count >= policy.dailyCap { throw HeraldError(.tooManyAttempts, "") }
            sends[key] = recent + [now]
        }
    }

    /// A new Firebase-style uid: 28 characters from the CSPRNG.
    static func newUID() -> String {
        String(ActionCode.generate().plaintext.filter { $0.isLetter || $0.isNumber }.prefix(28))
    }
}

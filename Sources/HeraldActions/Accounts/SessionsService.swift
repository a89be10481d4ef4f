import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// ID tokens and refresh tokens: every sign-in ends here, and every call that names the caller by an
/// ID token starts here. Signing is asynchronous (jwt-kit), store work is offloaded.
///
/// ```swift
/// let account = try await actions.sessions.account(forIDToken: idToken)
/// let session = try await actions.sessions.session(for: account)
/// ```
public final class SessionsService: Sendable, AccountOwnership {
    let store: any HeraldStore
    /// Whether Herald stores the accounts (`accounts.owner: herald`).
    public let ownsAccounts: Bool
    /// `tokens.keyFile`, and the project the tokens are issued for.
    let signingKeyPath: String
    let projectID: String
    /// The ID-token keys, read (or created) on first use: commands that never sign need no key file.
    private let idTokenKeys = Mutex<IDTokens?>(nil)

    init(configuration: HeraldConfiguration, store: any HeraldStore) {
        self.store = store
        ownsAccounts = configuration.accounts.owner == .herald
        signingKeyPath = configuration.signingKeyPath
        projectID = configuration.project.id
    }

    /// The keys that sign and verify ID tokens, from `tokens.keyFile` (created with a fresh key when absent).
    /// `herald serve` calls this at start-up, so a bad key file stops it before it listens.
    ///
    /// - Throws: `INVALID_CONFIGURATION` for a key file that cannot be read, written or parsed.
    @discardableResult
    public func idTokens() throws -> IDTokens {
        try idTokenKeys.withLock { keys in
            if let keys { return keys }
            let file = try SigningKeyFile.openOrCreate(path: signingKeyPath)
            let loaded = try IDTokens(file: file, projectID: projectID)
            keys = loaded
            return loaded
        }
    }
}

extension SessionsService {
    /// The account an ID token belongs to, if the token is genuine, current and not revoked.
    ///
    /// - Throws: `MISSING_ID_TOKEN`, `INVALID_ID_TOKEN`, `TOKEN_EXPIRED` (also when issued before the
    ///   account's validSince), `USER_NOT_FOUND` (also for a token issued before the account was created: one
    ///   for a deleted account whose uid was reused), `USER_DISABLED`; `OPERATION_NOT_ALLOWED` when the app owns accounts.
    public func account(forIDToken token: String?) async throws -> Account {
        try await signedIn(token).account
    }

    /// The account and claims of an ID token (see `account(forIDToken:)`).
    func signedIn(_ token: String?) async throws -> (account: Account, claims: IDTokens.Claims) {
        try requireAccountOwnership("an ID token")
        guard let token, !token.isEmpty else { throw HeraldError(.missingIDToken, "") }
        let claims = try await idTokens().verify(token)
        let store = store
        let account = try await offload { try store.account(uid: claims.uid) }
        // A token older than the account (to the millisecond) was issued to an earlier account with the same
        // uid, deleted since: it never speaks for the new one, even within the second validSince allows.
        guard let account, claims.issuedAt >= account.createdAt.milliseconds else { throw HeraldError(.userNotFound, "") }
        guard !account.disabled else { throw HeraldError(.userDisabled, "") }
        guard claims.issuedAt >= account.validSince else { throw HeraldError(.tokenExpired, "") }
        return (account, claims)
    }

    /// Starts a session: stores a new refresh token (its hash) and signs an ID token.
    public func session(for account: Account, provider: String = "password", now: Date = Date()) async throws -> Session {
        let tokens = try idTokens()
        let refreshToken = ActionCode.generate().plaintext
        let record = RefreshTokenRecord(hash: ActionCode.hash(refreshToken), uid: account.uid, provider: provider, issuedAt: now)
        let store = store
        let identities = try await offload { () throws -> [FederatedIdentity] in
            try store.createRefreshToken(record)
            return try Self.linkedIdentities(of: account, in: store)
        }
        let idToken = try await tokens.issue(for: account, provider: provider, identities: identities, authTime: now, now: now)
        return Session(
            idToken: idToken, refreshToken: refreshToken, expiresIn: String(Int(IDTokens.lifetime)), localId: account.uid,
            email: account.email ?? "")
    }

    /// The provider identities an ID token lists (`firebase.identities`); none read for accounts without providers.
    static func linkedIdentities(of account: Account, in store: any HeraldStore) throws -> [FederatedIdentity] {
        guard account.providers.contains(where: { $0 != "password" && $0 != "emailLink" }) else { return [] }
        return try store.identities(uid: account.uid)
    }

    /// `securetoken.googleapis.com/v1/token`: a fresh ID token for a refresh token, which stays the same.
    ///
    /// A refresh token ends when its account is deleted (`USER_NOT_FOUND`) or disabled (`USER_DISABLED`), and
    /// when the account's validSince passes it (`TOKEN_EXPIRED`: a password reset or change, an email change,
    /// an administrator's revocation).
    ///
    /// - Throws: `MISSING_GRANT_TYPE`, `INVALID_GRANT_TYPE`, `MISSING_REFRESH_TOKEN`, `INVALID_REFRESH_TOKEN`,
    ///   `TOKEN_EXPIRED`, `USER_DISABLED`, `USER_NOT_FOUND`.
    public func refresh(grantType: String?, refreshToken: String?, now: Date = Date()) async throws -> Session {
        guard let grantType, !grantType.isEmpty else { throw HeraldError(.missingGrantType, "") }
        guard grantType == "refresh_token" else { throw HeraldError(.invalidGrantType, "") }
        guard let refreshToken, !refreshToken.isEmpty else { throw HeraldError(.missingRefreshToken, "") }
        try requireAccountOwnership("a refresh token")
        let store = store
        let (record, account, identities) = try await offload { () throws -> (RefreshTokenRecord, Account, [FederatedIdentity]) in
            guard let record = try store.refreshToken(hash: ActionCode.hash(refreshToken)) else {
                throw HeraldError(.invalidRefreshToken, "")
            }
            if let revoked = record.revoked { throw HeraldError(revoked, "") }
            guard let account = try store.account(uid: record.uid), record.issuedAt >= account.createdAt else {
                throw HeraldError(.userNotFound, "")
            }
            guard !account.disabled else { throw HeraldError(.userDisabled, "") }
            guard record.issuedAt.milliseconds >= account.validSince else { throw HeraldError(.tokenExpired, "") }
            return (record, account, try Self.linkedIdentities(of: account, in: store))
        }
        let idToken = try await idTokens().issue(
            for: account, provider: record.provider, identities: identities, authTime: record.issuedAt, now: now)
        return Session(
            idToken: idToken, refreshToken: refreshToken, expiresIn: String(Int(IDTokens.lifetime)), localId: account.uid,
            email: account.email ?? "")
    }
}

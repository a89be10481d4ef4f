import Crypto
import Foundation
import HeraldCore

/// The console's signed session cookies and CSRF tokens; nothing is kept on the server.
///
/// A session is `<expiry ms>.<nonce>.<mac>`, MACed with a key derived from `server.adminToken`: any
/// `herald serve` sharing the token honours it, and changing the token ends every session. A read-only session
/// (signed in with `server.consoleReadToken`) is `<expiry ms>.<nonce>.read.<mac>`, its MAC bound to that token
/// too: changing either ends it. A form's CSRF token is a MAC of the session's nonce (the sign-in form's, of a
/// random value in its own cookie).
///
/// ```swift
/// let sessions = ConsoleSessions(configuration.server)
/// let cookie = sessions.issue()
/// let session = sessions.verify(cookie)  // nil once tampered with or expired
/// ```
struct ConsoleSessions: Sendable {
    /// One signed-in browser.
    struct Session: Sendable, Hashable {
        let nonce: String
        let expires: Date
        /// The token every form of this session carries.
        let csrf: String
        /// Signed in with the read token: it reads every page and changes nothing.
        var readOnly = false

        /// Whether this session may change things: its pages carry change forms (`ConsolePage.canChange`).
        var canChange: Bool { !readOnly }

        /// Who did a console action, for the ledger's action log: the role and the start of the session's nonce
        /// (`admin:1a2b3c4d`, `read-only:9f8e7d6c`); the nonce alone signs nothing in.
        var actorLabel: String { "\(readOnly ? "read-only" : "admin"):\(nonce.prefix(8))" }

        /// Who did a console action, for the log: the role and the start of the session's nonce.
        var actor: String { "console:\(readOnly ? "reader" : "admin"):\(nonce.prefix(8))" }
    }

    static let cookie = "herald_console"
    static let signInCookie = "herald_console_csrf"
    static let path = "/admin"
    static let lifetime: TimeInterval = 8 * 3600

    /// Nil when no admin token is configured: the console then signs nobody in.
    private let key: SymmetricKey?
    /// `server.consoleReadToken`, empty for none.
    private let readToken: String
    /// A digest of the read token, bound into read-only sessions' MACs.
    private let readTag: String

    init(_ server: HeraldConfiguration.Server) {
        key =
            server.adminToken.isEmpty
            ? nil
            : SymmetricKey(
                data: HMAC<SHA256>.authenticationCode(for: Data("herald console v1".utf8), using: SymmetricKey(data: Data(server.adminToken.utf8))))
        readToken = key == nil ? "" : server.consoleReadToken
        readTag = Base64URL.encode(Array(SHA256.hash(data: Data("herald console read v1:\(readToken)".utf8))))
    }

    var isEnabled: Bool { key != nil }

    /// Whether a read-only token is configured.
    var hasReadToken: Bool { !readToken.isEmpty }

    /// Whether `token` is the read-only token (none configured: never).
    func isReadToken(_ token: String) -> Bool { !readToken.isEmpty && Secret.equal(token, readToken) }

    /// A new session's cookie value; `readOnly` for one signed in with the read token.
    func issue(readOnly: Bool = false, now: Date = Date()) -> String? {
        guard key != nil, !readOnly || !readToken.isEmpty else { return nil }
        let payload = "\(Int64((now.timeIntervalSince1970 + Self.lifetime) * 1000)).\(Self.randomToken())"
        return readOnly ? "\(payload).read.\(mac("read-session:\(readTag):" + payload))" : "\(payload).\(mac("session:" + payload))"
    }

    /// The session a cookie value names, if it is genuine and unexpired.
    func verify(_ value: String?, now: Date = Date()) -> Session? {
        guard let value, key != nil else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        let readOnly = parts.count == 4 && parts[2] == "read"
        guard parts.count == 3 || readOnly, let expiresMS = Int64(parts[0]) else { return nil }
        let payload = "\(parts[0]).\(parts[1])"
        if readOnly {
            guard !readToken.isEmpty, Secret.equal(String(parts[3]), mac("read-session:\(readTag):" + payload)) else { return nil }
        } else {
            guard Secret.equal(String(parts[2]), mac("session:" + payload)) else { return nil }
        }
        let expires = Date(timeIntervalSince1970: Double(expiresMS) / 1000)
        guard expires > now else { return nil }
        let nonce = String(parts[1])
        return Session(nonce: nonce, expires: expires, csrf: mac("csrf:" + nonce), readOnly: readOnly)
    }

    /// The sign-in form's CSRF token for the random value in its cookie.
    func signInToken(for value: String) -> String? { key.map { _ in mac("sign-in:" + value) } }

    /// A fresh random value for the sign-in form's cookie.
    static func randomToken() -> String {
        Base64URL.encode(Array(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }))
    }

    private func mac(_ text: String) -> String {
        guard let key else { return "" }
        return Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }
}

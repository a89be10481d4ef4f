import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// The administrator's credential: `Authorization: Bearer <server.adminToken>`, or the Admin SDKs'
/// emulator credential `Bearer owner` from loopback when `server.allowEmulatorOwner` is set (and never
/// through a proxy on the same host: a request carrying `X-Forwarded-For` or `Forwarded` is not local); for
/// reading pages and exports, also the `/admin` console's session cookie. Wrong bearer tokens count against
/// the client's network (`AdminTokenCheck`); past the limit they are answered 429, the right one never is.
struct AdminCredential: Sendable {
    let check: AdminTokenCheck
    let allowsEmulatorOwner: Bool
    /// The console's sessions, when they may read (`GET`) these routes (the campaign report and the audit
    /// exports); nil elsewhere, and never for a change.
    let sessions: ConsoleSessions?

    init(_ server: HeraldConfiguration.Server, check: AdminTokenCheck, consoleReads: Bool = false) {
        self.check = check
        allowsEmulatorOwner = server.allowEmulatorOwner
        sessions = consoleReads ? ConsoleSessions(server) : nil
    }

    /// Returns when the request carries the credential: the console's session when that was it, else nil.
    ///
    /// - Throws: `UNAUTHENTICATED` (401) without it; `TOO_MANY_ATTEMPTS_TRY_LATER` (429) for a wrong bearer
    ///   token once the client's network has presented too many.
    @discardableResult
    func authenticate(_ request: Request, context: HeraldRequestContext) throws -> ConsoleSessions.Session? {
        if let sessions, request.method == .get || request.method == .head,
            let session = sessions.verify(request.cookies[ConsoleSessions.cookie]?.value)
        {
            return session
        }
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else {
            throw FirebaseError.unauthenticated
        }
        let presented = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if allowsEmulatorOwner, presented.lowercased() == "owner", context.isLocal(request) { return nil }
        switch check.check(presented, clientIP: context.clientIP) {
        case .admin: return nil
        case .wrong: throw FirebaseError.unauthenticated
        case .lockedOut: throw FirebaseError.tooManyAdminTokens
        }
    }
}

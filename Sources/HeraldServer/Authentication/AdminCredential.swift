import Foundation
import HeraldCore
import Hummingbird

/// The administrator's credential: `Authorization: Bearer <server.adminToken>`, or the Admin SDKs'
/// emulator credential `Bearer owner` from loopback when `server.allowEmulatorOwner` is set (and never
/// through a proxy on the same host: a request carrying `X-Forwarded-For` or `Forwarded` is not local); for
/// reading pages and exports, also the `/admin` console's session cookie.
struct AdminCredential: Sendable {
    /// Empty disables admin calls (an empty bearer token never matches).
    let token: String
    let allowsEmulatorOwner: Bool
    /// The console's sessions, when they may read (`GET`) these routes (the campaign report and the audit
    /// exports); nil elsewhere, and never for a change.
    let sessions: ConsoleSessions?

    init(_ server: HeraldConfiguration.Server, consoleReads: Bool = false) {
        token = server.adminToken
        allowsEmulatorOwner = server.allowEmulatorOwner
        sessions = consoleReads ? ConsoleSessions(server) : nil
    }

    /// Whether the request carries the credential.
    func isPresented(by request: Request, context: HeraldRequestContext) -> Bool {
        if let sessions, request.method == .get || request.method == .head,
            sessions.verify(request.cookies[ConsoleSessions.cookie]?.value) != nil
        {
            return true
        }
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else {
            return false
        }
        let presented = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if !token.isEmpty, Secret.equal(presented, token) { return true }
        return allowsEmulatorOwner && presented.lowercased() == "owner" && context.isLocal(request)
    }
}

import Foundation
import HeraldCore
import Hummingbird

/// The administrator's credential: `Authorization: Bearer <server.adminToken>`, or the Admin SDKs'
/// emulator credential `Bearer owner` from loopback when `server.allowEmulatorOwner` is set (and never
/// through a proxy on the same host: a request carrying `X-Forwarded-For` or `Forwarded` is not local).
struct AdminCredential: Sendable {
    /// Empty disables admin calls (an empty bearer token never matches).
    let token: String
    let allowsEmulatorOwner: Bool

    init(_ server: HeraldConfiguration.Server) {
        token = server.adminToken
        allowsEmulatorOwner = server.allowEmulatorOwner
    }

    /// Whether the request carries the credential.
    func isPresented(by request: Request, context: HeraldRequestContext) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else {
            return false
        }
        let presented = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if !token.isEmpty, Secret.equal(presented, token) { return true }
        return allowsEmulatorOwner && presented.lowercased() == "owner" && context.isLocal(request)
    }
}

import Foundation
import HTTPTypes
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
        return allowsEmulatorOwner && presented.lowercased() == "owner" && context.isLoopback && !Self.isProxied(request)
    }

    /// A request a proxy forwarded: whatever its peer, it did not come from this host's Admin SDK.
    static func isProxied(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("X-Forwarded-For")!] != nil || request.headers[HTTPField.Name("Forwarded")!] != nil
    }
}

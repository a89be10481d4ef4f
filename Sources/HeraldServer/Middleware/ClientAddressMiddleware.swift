import HeraldCore
import Hummingbird

/// Sets `context.clientIP`: the peer's address, or, when the peer is one of `limits.trustedProxies`, the
/// right-most `X-Forwarded-For` address that is not a trusted proxy. A client cannot escape the per-address
/// limits by sending the header itself: from an untrusted peer it is ignored.
struct ClientAddressMiddleware: RouterMiddleware {
    let trustedProxies: [IPNetwork]

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let forwarded = trustedProxies.isEmpty ? [] : request.headers[values: .init("X-Forwarded-For")!]
        context.clientIP = IPNetwork.client(peer: context.remoteIP, forwardedFor: forwarded, trusted: trustedProxies)
        return try await next(request, context)
    }
}

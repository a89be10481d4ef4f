import HeraldActions
import Hummingbird
import JWTKit

/// The public keys of Herald's ID tokens, for any backend to verify them: a JWKS, and Google's x509 form
/// (`{kid: certificate PEM}`) at the paths Firebase's libraries know.
struct PublicKeysController: Sendable {
    let tokens: IDTokens

    var routes: RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
        for path in ["/.well-known/jwks.json", "service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"] {
            routes.get(RouterPath(path)) { _, _ in try Self.cacheable(tokens.jwks) }
        }
        routes.get("robot/v1/metadata/x509/securetoken@system.gserviceaccount.com") { _, _ in
            try Self.cacheable(tokens.certificates)
        }
        return routes
    }

    /// Cached briefly: a rotation (with a restart) reaches verifiers within minutes, before a new key's tokens
    /// would meet a stale cache for long (PyJWT and others also refetch on an unknown `kid`).
    private static func cacheable(_ value: some Encodable) throws -> Response {
        var response = try FirebaseJSONEncoder.response(value)
        response.headers[.cacheControl] = "public, max-age=300"
        return response
    }
}

import HeraldCore
import Hummingbird

/// Authenticates an Identity Toolkit call and sets `context.caller`.
///
/// With an `Authorization: Bearer …` header it must be the admin credential (else 401 `UNAUTHENTICATED`);
/// without (any other scheme is ignored, as Firebase's emulator does), `?key=` or `x-goog-api-key` must be
/// the project's API key (missing: 403, wrong: 400 `keyInvalid`).
struct CallerMiddleware: RouterMiddleware {
    let apiKey: String
    let admin: AdminCredential

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        if let authorization = request.headers[.authorization],
            authorization.split(separator: " ", maxSplits: 1).first?.lowercased() == "bearer"
        {
            try admin.authenticate(request, context: context)
            context.caller = .admin
        } else {
            let key = request.uri.queryParameters.get("key") ?? request.headers[.init("x-goog-api-key")!]
            guard let key, !key.isEmpty else { throw FirebaseError.missingAPIKey }
            guard Secret.equal(key, apiKey) else { throw FirebaseError.invalidAPIKey }
            context.caller = .app
        }
        return try await next(request, context)
    }
}

import HeraldActions
import HeraldCore
import Hummingbird

/// Lets only the administrator through (the admin pages); anyone else gets 401 `UNAUTHENTICATED`.
struct AdminOnlyMiddleware: RouterMiddleware {
    let admin: AdminCredential

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        let session = try admin.authenticate(request, context: context)
        var context = context
        context.caller = .admin
        context.consoleSession = session
        return try await next(request, context)
    }
}

extension RouteCollection<HeraldRequestContext> {
    /// A collection for the administrator only, answering errors in Firebase's envelope (the admin API); with
    /// `consoleReads`, the console's session cookie may also `GET` its routes.
    static func adminOnly(
        _ configuration: HeraldConfiguration, check: AdminTokenCheck, consoleReads: Bool = false
    ) -> RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: ClientAddressMiddleware(trustedProxies: configuration.limits.trustedProxies))
            .add(middleware: AdminOnlyMiddleware(admin: AdminCredential(configuration.server, check: check, consoleReads: consoleReads)))
    }
}

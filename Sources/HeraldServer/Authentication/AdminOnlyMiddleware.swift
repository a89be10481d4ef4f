import HeraldCore
import Hummingbird

/// Lets only the administrator through (the admin pages); anyone else gets 401 `UNAUTHENTICATED`.
struct AdminOnlyMiddleware: RouterMiddleware {
    let admin: AdminCredential

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        guard admin.isPresented(by: request, context: context) else { throw FirebaseError.unauthenticated }
        var context = context
        context.caller = .admin
        return try await next(request, context)
    }
}

extension RouteCollection<HeraldRequestContext> {
    /// A collection for the administrator only, answering errors in Firebase's envelope (the admin API); with
    /// `consoleReads`, the console's session cookie may also `GET` its routes.
    static func adminOnly(_ server: HeraldConfiguration.Server, consoleReads: Bool = false) -> RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: AdminOnlyMiddleware(admin: AdminCredential(server, consoleReads: consoleReads)))
    }
}

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

import Hummingbird

/// Caps the JSON body the request decoder reads (`server.maxBodyBytes`); a larger one is an `INVALID_ARGUMENT`.
struct BodyLimitMiddleware: RouterMiddleware {
    let maxBytes: Int

    func handle(
        _ request: Request, context: HeraldRequestContext, next: (Request, HeraldRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxUploadSize = maxBytes
        return try await next(request, context)
    }
}

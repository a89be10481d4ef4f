import HeraldCore
import Hummingbird

/// Answers every failure in Firebase's envelope: a `HeraldError` is a 400 `CODE : detail` (a logged 503 when the
/// ledger is unavailable, logged at debug level), any error that is not already an HTTP answer a logged 500 `INTERNAL_ERROR` that
/// reveals nothing.
struct FirebaseErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HeraldError {
            // The 503 tells the client only to come back; the episode is logged once (`LedgerHealthMiddleware`), each
            // refused request only at debug level.
            if error.code == .unavailable {
                context.logger.debug("answered 503", metadata: ["error": "\(error.detail)", "path": "\(request.uri.path)"])
            }
            throw FirebaseError(error)
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw FirebaseError.internalError
        }
    }
}

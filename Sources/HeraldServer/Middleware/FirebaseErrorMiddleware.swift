import HeraldCore
import Hummingbird

/// Answers every failure in Firebase's envelope: a `HeraldError` is a 400 `CODE : detail`, any error
/// that is not already an HTTP answer a logged 500 `INTERNAL_ERROR` that reveals nothing.
struct FirebaseErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HeraldError {
            throw FirebaseError(error)
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw FirebaseError.internalError
        }
    }
}

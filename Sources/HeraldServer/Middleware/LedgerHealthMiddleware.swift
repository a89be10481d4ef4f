import HeraldCore
import Hummingbird
import Logging

/// Tells `Health` when requests find the ledger unavailable, so `/health` turns 503 on every `herald serve`
/// (an API-only node's too, which has no worker to notice) and load balancers route elsewhere. The episode is logged
/// once as it begins (the reason in the ledger's own words) and once as it ends (`/health`'s probe, or the worker,
/// finds the ledger committing again), not once per refused request.
struct LedgerHealthMiddleware<Context: RequestContext>: RouterMiddleware {
    let health: Health
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            if response.status == .serviceUnavailable, request.uri.path != "/health" { noteUnavailable("a request could not commit") }
            return response
        } catch let error as FirebaseError where error.status == .serviceUnavailable {
            noteUnavailable(error.detail ?? "a request could not commit")
            throw error
        } catch let error as HeraldError where error.code == .unavailable {
            noteUnavailable(error.detail)
            throw error
        }
    }

    private func noteUnavailable(_ reason: String) {
        if health.ledgerUnavailable(reason) {
            logger.warning("ledger unavailable; requests that must write are answered 503 until it commits again", metadata: ["error": "\(reason)"])
        }
    }
}

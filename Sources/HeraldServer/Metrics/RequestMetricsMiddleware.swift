import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Counts every routed request by route pattern, method and status, with its duration, through swift-metrics:
/// `herald_http_requests_total` and `herald_http_request_duration_seconds`. Unrouted paths share the route
/// `NotFound`, so no client can grow the series.
///
/// Not Hummingbird's `MetricsMiddleware`: it wraps each response body to time its write, which takes every
/// response off the one-write path (head, body and end went out as three writes). The duration here ends when
/// the handler returns its response; for Herald's small bodies that is all but the socket write.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache = RequestMetricsCache()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let response = try await next(request, context)
            record(request, context, response.status, since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            record(request, context, status, since: start)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, _ status: HTTPResponse.Status, since start: UInt64) {
        let key = RequestMetricsCache.Key(route: context.endpointPath ?? "NotFound", method: request.method, status: status.code)
        let metrics = cache.metrics(for: key)
        metrics.requests.increment()
        metrics.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
    }
}

/// One counter and one timer per route, method and status, made once (a swift-metrics factory lookup takes a lock).
final class RequestMetricsCache: Sendable {
    struct Key: Hashable, Sendable {
        let route: String
        let method: HTTPRequest.Method
        let status: Int
    }

    struct Entry: Sendable {
        let requests: Counter
        let duration: Metrics.Timer
    }

    private let entries = Mutex<[Key: Entry]>([:])

    func metrics(for key: Key) -> Entry {
        entries.withLock { entries in
            if let entry = entries[key] { return entry }
            let labels = [("route", key.route), ("method", key.method.rawValue), ("status", String(key.status))]
            let entry = Entry(
                requests: Counter(label: "herald_http_requests_total", dimensions: labels),
                duration: Metrics.Timer(label: "herald_http_request_duration_seconds", dimensions: labels))
            entries[key] = entry
            return entry
        }
    }
}

import HeraldCore
import Hummingbird
import Logging

/// `GET /metrics`: every metric of the process in Prometheus's text format, with the outbox gauges refreshed from
/// the ledger first. With `server.metricsToken` set, only `Authorization: Bearer <token>` gets them. `herald serve`
/// routes it beside the API; `herald worker` serves it alone (`HeraldMetrics.application`).
public struct MetricsController<Context: RequestContext>: Sendable {
    let token: String
    /// The ledger's counts by state, action and campaign.
    let counts: @Sendable () async throws -> [OutboxCount]
    let logger: Logger

    public init(token: String, counts: @escaping @Sendable () async throws -> [OutboxCount], logger: Logger) {
        self.token = token
        self.counts = counts
        self.logger = logger
    }

    static var contentType: String { "text/plain; version=0.0.4; charset=utf-8" }

    public var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("metrics") { request, _ in try await scrape(request) }
        return routes
    }

    func scrape(_ request: Request) async throws -> Response {
        guard token.isEmpty || presentsToken(request) else {
            throw HTTPError(.unauthorized, headers: [.wwwAuthenticate: "Bearer"], message: "a bearer token is required")
        }
        do {
            HeraldMetrics.outbox.update(try await counts())
        } catch {
            // The counters still go out; the outbox gauges keep their last values.
            logger.warning("metrics: could not count the outbox", metadata: ["error": "\(error)"])
        }
        let body = ByteBuffer(bytes: HeraldMetrics.registry.emitToBuffer())
        return Response(status: .ok, headers: [.contentType: Self.contentType], body: .init(byteBuffer: body))
    }

    private func presentsToken(_ request: Request) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else { return false }
        return Secret.equal(String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces), token)
    }
}

import Foundation
import HeraldCore
import Hummingbird
import Logging
import Synchronization

/// `GET /metrics`: every metric of the process in Prometheus's text format (`HeraldMetrics.exposition()`: each family
/// with its `# HELP`, `herald_build_info` and the `process_*` figures read at the scrape), with the outbox gauges refreshed from
/// the ledger at most once per `gaugeInterval` (10 s): counting the outbox reads the whole table, so a scrape only
/// pays for it when the last count is older, and scrapers together pay for one count per interval. With
/// `server.metricsToken` set, only `Authorization: Bearer <token>` gets them. `herald serve` routes it beside the
/// API; `herald worker` serves it alone (`HeraldMetrics.application`).
public struct MetricsController<Context: RequestContext>: Sendable {
    let token: String
    /// The ledger's counts by state, action and campaign.
    let counts: @Sendable () async throws -> [OutboxCount]
    let logger: Logger
    let gauges: GaugeRefresh

    public init(
        token: String, counts: @escaping @Sendable () async throws -> [OutboxCount], logger: Logger, gaugeInterval: TimeInterval = 10
    ) {
        self.token = token
        self.counts = counts
        self.logger = logger
        gauges = GaugeRefresh(interval: gaugeInterval)
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
        if gauges.claim() {
            do {
                HeraldMetrics.outbox.update(try await counts())
            } catch {
                // The counters still go out; the outbox gauges keep their last values.
                gauges.failed()
                logger.warning("metrics: could not count the outbox", metadata: ["error": "\(error)"])
            }
        }
        let body = ByteBuffer(bytes: HeraldMetrics.exposition())
        return Response(status: .ok, headers: [.contentType: Self.contentType], body: .init(byteBuffer: body))
    }

    private func presentsToken(_ request: Request) -> Bool {
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ") else { return false }
        return Secret.equal(String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces), token)
    }
}

/// When the outbox gauges were last counted: one scrape at a time takes the next count, once the last is
/// `interval` old; the others answer with the gauges as they are.
public final class GaugeRefresh: Sendable {
    private let last = Mutex(MonotonicInstant.distantPast)
    let interval: TimeInterval

    init(interval: TimeInterval) { self.interval = interval }

    /// Whether this scrape counts: true for one caller once the last count is `interval` old.
    func claim() -> Bool {
        last.withLock { last in
            let now = MonotonicInstant.now()
            guard last == .distantPast || now.seconds(since: last) >= interval else { return false }
            last = now
            return true
        }
    }

    /// The count failed: the next scrape tries again.
    func failed() { last.withLock { $0 = .distantPast } }
}

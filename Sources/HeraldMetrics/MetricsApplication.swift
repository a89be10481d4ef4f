import HeraldCore
import Hummingbird
import Logging

extension HeraldMetrics {
    /// `herald worker`'s metrics listener: `GET /metrics` alone, on `worker.metricsHost:worker.metricsPort`.
    ///
    /// ```swift
    /// let app = HeraldMetrics.application(configuration: configuration, counts: { try await actions.reports.outboxCounts() },
    ///     logger: logger) { port in logger.info("metrics on \(port)") }
    /// ```
    public static func application(
        configuration: HeraldConfiguration, counts: @escaping @Sendable () async throws -> [OutboxCount], logger: Logger,
        onListening: @escaping @Sendable (Int) -> Void
    ) -> some ApplicationProtocol {
        let router = Router()
        let controller = MetricsController<BasicRequestContext>(
            token: configuration.server.metricsToken, counts: counts, logger: logger, gaugeInterval: configuration.server.metricsGaugeInterval)
        router.addRoutes(controller.routes)
        let worker = configuration.worker
        return Application(
            router: router,
            configuration: .init(address: .hostname(worker.metricsHost, port: worker.metricsPort), serverName: "Herald"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? worker.metricsPort) },
            logger: logger)
    }
}

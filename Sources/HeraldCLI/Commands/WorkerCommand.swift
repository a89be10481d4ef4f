import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldMetrics
import HeraldStore
import HeraldWorker
import ServiceLifecycle

/// `herald worker`: sends due mail until stopped (or until the queue is empty), as a service group: the worker, and
/// its metrics listener when `worker.metricsPort` is set.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send queued mail. SIGINT/SIGTERM finish in-flight sends, record them and exit 0."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Exit once nothing is queued, deferred or sending.") var untilEmpty = false
    @Option(help: "SMTP connections; defaults to smtp.connections.") var concurrency: Int?

    func run() async throws {
        try await reportingErrors {
            CurlSMTPDispatcher.initializeLibrary()  // before any thread starts
            let runtime = try await Runtime.load(global)
            HeraldMetrics.bootstrap()  // before the worker makes its counters
            let configuration = runtime.configuration
            let connections = concurrency ?? configuration.smtp.connections
            guard (1...64).contains(connections) else { throw ValidationError("--concurrency must be from 1 to 64") }
            let store = try await runtime.openStoreWaiting()
            let composer = try runtime.composer()
            var worker = Worker(
                store: store, composer: composer, configuration: configuration, logger: runtime.logger,
                makeDispatcher: runtime.makeDispatcher)
            // On PostgreSQL, mail queued by any process wakes this worker (LISTEN/NOTIFY) instead of waiting for its poll.
            let relay = (store as? PostgresStore).map { postgres in
                let signal = QueueSignal()
                worker.queueSignal = signal
                return postgres.relayQueueNotifications(to: signal)
            }
            defer { relay?.cancel() }
            runtime.logger.info(
                "worker started",
                metadata: ["smtp": "\(Self.redacted(configuration.smtp.url))", "connections": "\(connections)", "untilEmpty": "\(untilEmpty)"])
            let service = WorkerService(worker: worker, concurrency: connections, untilEmpty: untilEmpty)
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
            if configuration.worker.metricsPort != 0 {
                // Listed first, so it stops last: the final counts can still be scraped while the worker drains.
                let reports = Actions(
                    configuration: configuration, store: store, composer: composer, testSend: runtime.testSend, logger: runtime.logger
                ).reports
                let logger = runtime.logger
                let host = configuration.worker.metricsHost
                let metrics = HeraldMetrics.application(
                    configuration: configuration, counts: { try await reports.outboxCounts() }, logger: logger
                ) { port in logger.info("metrics listening", metadata: ["url": "http://\(host):\(port)/metrics"]) }
                services.append(.init(service: metrics, serviceName: "metrics"))
            }
            if !configuration.webhooks.endpoints.isEmpty {
                // Before the worker, so it stops after it; what it has not posted stays queued for the next worker.
                services.append(
                    .init(
                        service: WebhookService(configuration: configuration.webhooks, store: store, logger: runtime.logger), serviceName: "webhooks")
                )
            }
            services.append(.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "worker"))
            let group = ServiceGroup(
                configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: runtime.logger))
            try await StopSignals.run(group)
        }
    }

    /// The SMTP URL without any user-info, for logs.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "<unparseable>" }
        components.user = nil
        components.password = nil
        return components.string ?? "<unparseable>"
    }
}

import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldMetrics
import HeraldStore
import HeraldWorker
import ServiceLifecycle
import Synchronization

/// `herald worker`: sends due mail until stopped (or until the queue is empty), as a service group: the worker, and
/// its metrics listener when `worker.metricsPort` is set.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send queued mail. SIGINT/SIGTERM finish in-flight sends, record them and exit 0.",
        discussion: """
            Progress (sent, deferred and failed since start, msg/s, pending, ETA) is a line on standard error rewritten \
            twice a second on a terminal, and a 'progress:' log line every 10 seconds otherwise.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Exit once nothing is queued, deferred or sending.") var untilEmpty = false
    @Option(
        help: """
            With --until-empty: give up, exiting 1 with the reason, when no queued mail has gone for this long \
            (e.g. 90s, 5m; 0 waits for ever).
            """)
    var maxWait = "5m"
    @Option(help: "SMTP connections; defaults to smtp.connections.") var concurrency: Int?

    func run() async throws {
        try await reportingErrors {
            CurlSMTPDispatcher.initializeLibrary()  // before any thread starts
            let runtime = try await Runtime.load(global)
            HeraldMetrics.bootstrap()  // before the worker makes its counters
            let configuration = runtime.configuration
            let connections = concurrency ?? configuration.smtp.connections
            guard (1...64).contains(connections) else { throw ValidationError("--concurrency must be from 1 to 64") }
            guard let patience = DurationText.parse(maxWait), patience >= 0 else {
                throw ValidationError("--max-wait: expected a duration such as 90s or 5m, got '\(maxWait)'")
            }
            try runtime.requireRelay()
            let store = try await runtime.openStoreWaiting()
            let composer = try runtime.composer()
            var worker = Worker(
                store: store, composer: composer, configuration: configuration, logger: runtime.logger,
                makeDispatcher: runtime.makeDispatcher)
            worker.archive = try LedgerArchive(configuration.ledger)
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
            let relayProblem = Mutex<RelayProblem?>(nil)
            worker.onRelayProblem = { problem in relayProblem.withLock { $0 = problem } }
            let service = WorkerService(worker: worker, concurrency: connections, untilEmpty: untilEmpty)
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
            if untilEmpty, patience > 0 {
                let patienceService = QueuePatience(store: store, patience: patience) { relayProblem.withLock { $0 } }
                services.append(.init(service: patienceService, failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "max-wait"))
            }
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
            // Sent, deferred, failed, rate and ETA: a line on a terminal, a log line every 10 s otherwise.
            services.append(.init(service: WorkerProgress(store: store, logger: runtime.logger), serviceName: "progress"))
            services.append(.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "worker"))
            let group = ServiceGroup(
                configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: runtime.logger))
            guard configuration.worker.metricsPort != 0 else { return try await StopSignals.run(group) }
            try await listening("worker.metricsPort", host: configuration.worker.metricsHost, port: configuration.worker.metricsPort) {
                try await StopSignals.run(group)
            }
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

/// `--max-wait`: ends a `herald worker --until-empty` run that no longer gets anywhere. Every second it reads how much mail
/// is pending; when that has not shrunk for `patience`, it fails with what is left and why (the relay's last failure,
/// if the relay fails), which shuts the group down gracefully and exits 1. A ledger that cannot be read counts as no
/// progress; the worker itself waits for it.
struct QueuePatience: Service {
    let store: any OutboxStore
    let patience: TimeInterval
    let relayProblem: @Sendable () -> RelayProblem?

    struct GaveUp: Error, CustomStringConvertible {
        let description: String
    }

    func run() async throws {
        let clock = ContinuousClock()
        var least = Int.max
        var progressed = clock.now
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            if let pending = try? await offload({ try store.queueStatus().pending }), pending < least || pending == 0 {
                least = pending
                progressed = clock.now
            }
            if clock.now - progressed >= .seconds(patience) { throw GaveUp(description: reason(pending: least)) }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }

    private func reason(pending: Int) -> String {
        let left = pending == Int.max ? "the ledger could not be read" : "\(pending) message(s) still queued, deferred or sending"
        var line = "gave up after --max-wait \(DurationText.format(patience)) without progress: \(left)"
        if let problem = relayProblem() {
            line += "; the SMTP relay fails: \(problem.sinceDescription)"
        } else {
            line += " (see `herald messages --state deferred` for the relay's last replies)"
        }
        return line
    }
}

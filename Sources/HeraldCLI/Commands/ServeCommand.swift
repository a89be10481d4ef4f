import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldMetrics
import HeraldServer
import HeraldStore
import HeraldWorker
import ServiceLifecycle

/// `herald serve`: the Firebase-compatible HTTP API and action pages, with the send worker embedded,
/// as one supervised service group.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the Identity Toolkit email-action API and the action pages (worker embedded unless --no-worker).",
        discussion: """
            Prints 'READY http://host:port' once listening. SIGINT/SIGTERM stop the server and the worker gracefully. \
            If the embedded worker fails, /health answers 503 naming the failure for server.failureGrace, then the \
            server drains and the process exits 1.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Do not run the send worker in this process.") var noWorker = false

    func run() async throws {
        try await reportingErrors {
            CurlSMTPDispatcher.initializeLibrary()  // before any thread starts
            let runtime = try await Runtime.load(global)
            HeraldMetrics.bootstrap()  // before the worker makes its counters
            let configuration = runtime.configuration
            // Emulator mode lists its codes instead of mailing them.
            if !noWorker, !configuration.server.emulatorMode { try runtime.requireRelay() }
            let store = try await runtime.openStoreWaiting()
            let composer = try runtime.composer()
            let logger = runtime.logger
            let health = Health()
            let host = configuration.server.host
            let actions = Actions(
                configuration: configuration, store: store, composer: composer, testSend: runtime.testSend, logger: logger)
            let app = try HeraldServer.application(actions: actions, health: health, logger: logger) { port in
                FileHandle.standardOutput.write(Data("READY http://\(host):\(port)\n".utf8))
            }
            // Started first, so it stops last and writes the counts of the final second.
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
                .init(service: AbuseCountsService(refusals: actions.refusals), serviceName: "abuse-counts")
            ]
            var relays: [QueueNotificationRelay] = []
            defer { for relay in relays { relay.cancel() } }
            if !noWorker {
                var worker = Worker(
                    store: store, composer: composer, configuration: configuration, logger: logger, makeDispatcher: runtime.makeDispatcher)
                worker.onLedgerUnavailable = { reason in health.setUnavailable(reason) }
                worker.onRelayProblem = { problem in health.setRelayProblem(problem.map(\.sinceDescription)) }
                worker.queueSignal = actions.queued
                worker.besideAPI = true
                worker.archive = try LedgerArchive(configuration.ledger)
                // On PostgreSQL, mail other processes queue wakes the embedded worker too.
                if let postgres = store as? PostgresStore { relays.append(postgres.relayQueueNotifications(to: actions.queued)) }
                let grace = configuration.server.failureGrace
                let service = WorkerService(worker: worker, concurrency: configuration.smtp.connections) { error in
                    // Tell load balancers first, then drain: /health is 503 for the grace period.
                    health.fail("worker: \(error)")
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(grace)) }
                }
                if !configuration.webhooks.endpoints.isEmpty {
                    services.append(
                        .init(service: WebhookService(configuration: configuration.webhooks, store: store, logger: logger), serviceName: "webhooks"))
                }
                services.append(
                    .init(
                        service: service, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "worker"))
            }
            // Shutdown runs in reverse order: the API stops taking requests before the worker drains.
            services.append(.init(service: app, serviceName: "http"))
            let group = ServiceGroup(
                configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await listening("server.port", host: host, port: configuration.server.port) { try await StopSignals.run(group) }
        }
    }
}

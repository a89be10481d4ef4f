import ArgumentParser
import Foundation
import HeraldMail
import HeraldWorker
import ServiceLifecycle

/// `herald worker`: sends due mail until stopped (or until the queue is empty), as a service group of one.
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
            let configuration = runtime.configuration
            let connections = concurrency ?? configuration.smtp.connections
            guard (1...64).contains(connections) else { throw ValidationError("--concurrency must be from 1 to 64") }
            let settings = SMTPSettings(configuration.smtp)
            let worker = Worker(
                store: try await runtime.openStoreWaiting(), composer: try runtime.composer(), configuration: configuration, logger: runtime.logger
            ) { lanes in try CurlSMTPDispatcher(settings: settings, lanes: lanes) }
            runtime.logger.info(
                "worker started",
                metadata: ["smtp": "\(Self.redacted(configuration.smtp.url))", "connections": "\(connections)", "untilEmpty": "\(untilEmpty)"])
            let service = WorkerService(worker: worker, concurrency: connections, untilEmpty: untilEmpty)
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "worker")],
                    gracefulShutdownSignals: [.sigterm, .sigint], logger: runtime.logger))
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

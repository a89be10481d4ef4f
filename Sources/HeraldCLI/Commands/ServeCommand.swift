import ArgumentParser
import Foundation
import HeraldMail
import HeraldServer
import HeraldWorker

/// `herald serve`: the Firebase-compatible HTTP API and action pages, with the send worker embedded.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the Identity Toolkit email-action API and the action pages (worker embedded unless --no-worker).",
        discussion: "Prints 'READY http://host:port' once listening. SIGINT/SIGTERM stop the server and the worker gracefully."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Do not run the send worker in this process.") var noWorker = false

    func run() async throws {
        try await reportingErrors {
            CurlSMTPConnection.initializeLibrary()  // before any thread starts
            let runtime = try await Runtime.load(global)
            let configuration = runtime.configuration
            let store = try runtime.openStore()
            let composer = try runtime.composer()
            let host = configuration.server.host
            let app = try HeraldServer.application(
                configuration: configuration, store: store, composer: composer, logger: runtime.logger
            ) { port in
                FileHandle.standardOutput.write(Data("READY http://\(host):\(port)\n".utf8))
            }
            let stop = StopSignal()
            var worker: Task<WorkerSummary, any Error>?
            if !noWorker {
                let settings = SMTPSettings(configuration.smtp)
                let sender = Worker(store: store, composer: composer, configuration: configuration, logger: runtime.logger) {
                    try CurlSMTPConnection(settings: settings)
                }
                worker = Task { try await sender.run(untilEmpty: false, concurrency: configuration.smtp.connections, stop: stop) }
            }
            defer { stop.stop() }
            try await app.runService()  // returns after SIGINT/SIGTERM, once in-flight requests are done
            stop.stop()
            if let summary = try await worker?.value { runtime.logger.info("worker finished: \(summary)") }
        }
    }
}

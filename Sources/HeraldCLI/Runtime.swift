import ArgumentParser
import Crypto
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldStore
import HeraldWorker
import Logging
import Synchronization

/// What a command needs at run time, built once from the configuration file.
struct Runtime {
    let configuration: HeraldConfiguration
    let logger: Logger

    static func load(_ options: GlobalOptions) async throws -> Runtime {
        let configuration = try await ConfigurationLoader.load(path: options.config)
        LoggingBootstrap.once(configuration.log)
        return Runtime(configuration: configuration, logger: Logger(label: "herald"))
    }

    func openStore() throws -> any HeraldStore {
        try StoreOpener.open(
            configuration.database, webhooks: WebhookRouting(configuration.webhooks),
            reclaimingSpace: configuration.ledger.messageRetention > 0)
    }

    /// For the long-running commands: a ledger that is locked, read-only or on a full disk at
    /// start-up is waited for (logged), not a reason to exit; a stop signal meanwhile exits 0.
    func openStoreWaiting() async throws -> any HeraldStore {
        var delay = 0.1
        var waitingSince: Date?
        while true {
            do {
                let store = try openStore()
                if let waitingSince {
                    let seconds = String(format: "%.1f", Date().timeIntervalSince(waitingSince))
                    logger.info("ledger available again after \(seconds) s; starting", metadata: ["seconds": "\(seconds)"])
                }
                return store
            } catch let error as HeraldError where error.code == .unavailable {
                if waitingSince == nil {
                    waitingSince = Date()
                    logger.warning("ledger unavailable at start-up; waiting for it", metadata: ["error": "\(error.detail)"])
                }
                guard !StopSignals.isRequested else { throw ExitCode.success }
                try await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 5)
                guard !StopSignals.isRequested else { throw ExitCode.success }
            }
        }
    }

    /// The rulebook over the configured store; every command that reads or changes the ledger goes through it.
    ///
    /// Emulator mode is a `herald serve` setting (its codes live in the server's memory): commands always queue.
    func actions(creatingMailKey: Bool = true) throws -> Actions {
        var configuration = configuration
        configuration.server.emulatorMode = false
        return try Actions(
            configuration: configuration, store: openStore(), composer: composer(creatingMailKey: creatingMailKey), testSend: testSend,
            logger: logger)
    }

    /// Refuses to start a sender without a relay: Herald has no built-in SMTP server to fall back on.
    func requireRelay() throws {
        guard configuration.smtp.url.isEmpty else { return }
        throw HeraldError(
            .invalidConfiguration,
            "smtp.url: not set; name your SMTP relay in the config file or HERALD_SMTP_URL, e.g. smtp://mail.example.com:587")
    }

    /// Opens the given number of SMTP connections to `smtp.url` as one dispatcher: the worker's lanes.
    var makeDispatcher: @Sendable (_ lanes: Int) throws -> any MailDispatcher {
        let settings = SMTPSettings(configuration.smtp)
        return { lanes in try CurlSMTPDispatcher(settings: settings, lanes: lanes) }
    }

    /// The console's test sends, through a dispatcher of the worker's own kind (`SingleDelivery`).
    var testSend: @Sendable (MessageComposer.Composed) throws -> DeliveryResult {
        let delivery = SingleDelivery(configuration: configuration, makeDispatcher: makeDispatcher)
        return { composed in try delivery.deliver(composed) }
    }

    /// `creatingMailKey: false` is for `herald bounces ingest`, which only reads bounce addresses: a key made
    /// there (a pipe run from another directory) would match no address ever sent, so a missing one is an error.
    func composer(creatingMailKey: Bool = true) throws -> MessageComposer {
        let templates = try TemplateLibrary(
            directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale)
        return try MessageComposer(configuration: configuration, templates: templates, mailKey: mailKey(creating: creatingMailKey))
    }

    /// The key of bounce addresses, unsubscribe links and typed codes, when any is configured (`tokens.mailKeyFile`).
    func mailKey(creating: Bool = true) throws -> SymmetricKey? {
        guard
            !configuration.bounces.domain.isEmpty || !configuration.campaigns.unsubscribeURL.isEmpty
                || configuration.policy.typedCodes != .off
        else { return nil }
        if !creating, !FileManager.default.fileExists(atPath: configuration.mailKeyPath) {
            throw HeraldError(
                .invalidConfiguration,
                "tokens.mailKeyFile \(configuration.mailKeyPath) does not exist: the senders (herald worker, herald serve) create it; "
                    + "point tokens.mailKeyFile at theirs (an absolute path)")
        }
        return try MailKeyFile.openOrCreate(path: configuration.mailKeyPath)
    }
}

/// Logs go to standard error at `log.level` (`HERALD_LOG_LEVEL`), as text or, with `log.format: json`, one JSON
/// object per line (`JSONLogHandler`). The first configuration a process loads decides.
enum LoggingBootstrap {
    private static let done = Atomic(false)

    static func once(_ log: HeraldConfiguration.Log) {
        guard done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let level = Logger.Level(rawValue: log.level) ?? .info
        switch log.format {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = TextLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}

/// Runs a command body, turning any failure into one `error: …` line on stderr and the exit status its kind
/// has (`ExitStatus`).
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        let line = "\(error)".split(whereSeparator: \.isNewline).joined(separator: " ")
        FileHandle.standardError.write(Data("error: \(line)\n".utf8))
        throw ExitStatus.of(error)
    }
}

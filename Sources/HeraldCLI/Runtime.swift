import ArgumentParser
import Crypto
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldStore
import Logging

/// What a command needs at run time, built once from the configuration file.
struct Runtime {
    let configuration: HeraldConfiguration
    let logger: Logger

    static func load(_ options: GlobalOptions) async throws -> Runtime {
        LoggingBootstrap.once()
        let configuration = try await ConfigurationLoader.load(path: options.config)
        return Runtime(configuration: configuration, logger: Logger(label: "herald"))
    }

    func openStore() throws -> any HeraldStore {
        try StoreOpener.open(configuration.database)
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
                    logger.info("ledger available again after \(String(format: "%.1f", Date().timeIntervalSince(waitingSince))) s; starting")
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
    func actions() throws -> Actions {
        var configuration = configuration
        configuration.server.emulatorMode = false
        return try Actions(configuration: configuration, store: openStore(), composer: composer(), logger: logger)
    }

    func composer() throws -> MessageComposer {
        let templates = try TemplateLibrary(
            directory: configuration.templatesDirectory, defaultLocale: configuration.links.defaultLocale)
        return try MessageComposer(configuration: configuration, templates: templates, mailKey: mailKey())
    }

    /// The key of bounce addresses and unsubscribe links, when either is configured (`tokens.mailKeyFile`).
    func mailKey() throws -> SymmetricKey? {
        guard !configuration.bounces.domain.isEmpty || !configuration.campaigns.unsubscribeURL.isEmpty else { return nil }
        return try MailKeyFile.openOrCreate(path: configuration.mailKeyPath)
    }
}

/// Logs go to standard error; `HERALD_LOG_LEVEL` (trace…critical) sets the level, default `info`.
enum LoggingBootstrap {
    private static let bootstrap: Void = {
        let level = ProcessInfo.processInfo.environment["HERALD_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }()

    static func once() { _ = bootstrap }
}

/// Pretty, key-sorted JSON with slashes as written, for `--json` output.
func prettyJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

/// Runs a command body, turning any failure into one `error: …` line on stderr and exit code 1.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        let line = "\(error)".split(whereSeparator: \.isNewline).joined(separator: " ")
        FileHandle.standardError.write(Data("error: \(line)\n".utf8))
        throw ExitCode.failure
    }
}

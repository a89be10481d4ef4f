import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail
import HeraldStore
import HeraldWorker

/// `herald check`: what would stop Herald from doing its job as configured, found before it runs.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the configuration, the ledger, the SMTP relay, links, DKIM and signing keys; exit 1 on any error.",
        discussion: """
            Reads the configuration as every command does, opens the ledger (creating or migrating it as every command \
            does), talks to the relay as the worker does (greeting, EHLO, STARTTLS as configured, AUTH, then MAIL FROM \
            and RSET: nothing is sent), and prints one line per finding: ok, note, warn or error, with what to do.
            """)

    @OptionGroup var global: GlobalOptions

    /// One line of the report.
    struct Finding {
        enum Level: String {
            case ok, note, warn, error
        }

        let level: Level
        let area: String
        let text: String

        var line: String {
            "\(level.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))\(area.padding(toLength: 9, withPad: " ", startingAt: 0))\(text)"
        }
    }

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let configuration = runtime.configuration
            var findings = [Finding(level: .ok, area: "config", text: "\(global.config) reads without a problem")]
            findings += Self.ledger(runtime)
            findings += Self.relay(runtime)
            findings += Self.links(configuration)
            findings += Self.keys(runtime)
            for finding in findings { print(finding.line) }
            if findings.contains(where: { $0.level == .error }) { throw ExitCode.failure }
        }
    }

    static func ledger(_ runtime: Runtime) -> [Finding] {
        let database = runtime.configuration.database
        let store: any HeraldStore
        do {
            store = try runtime.openStore()
        } catch {
            return [Finding(level: .error, area: "ledger", text: "\(StoreOpener.describe(database)): \(error)")]
        }
        var findings = [
            Finding(
                level: .ok, area: "ledger",
                text: "\(StoreOpener.describe(database)) opens, at schema \(StoreOpener.schemaVersion)")
        ]
        do {
            _ = try store.queueStatus()
        } catch {
            findings.append(Finding(level: .error, area: "ledger", text: "cannot be read: \(error)"))
        }
        guard database.url.isEmpty else { return findings }
        let files = [database.path, database.path + "-wal", database.path + "-shm"].filter { FileManager.default.fileExists(atPath: $0) }
        let open = files.compactMap { path -> String? in
            guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0
            else { return nil }
            return "\(path) (\(String(mode, radix: 8)))"
        }
        if !open.isEmpty {
            findings.append(
                Finding(
                    level: .warn, area: "ledger",
                    text: "readable by other users: \(open.joined(separator: ", ")); run chmod 600 on them (Herald creates its files 0600)"))
        }
        return findings
    }

    static func relay(_ runtime: Runtime) -> [Finding] {
        do {
            try runtime.requireRelay()
        } catch let error as HeraldError {
            return [Finding(level: .error, area: "relay", text: error.detail)]
        } catch {
            return [Finding(level: .error, area: "relay", text: "\(error)")]
        }
        let url = WorkerCommand.redacted(runtime.configuration.smtp.url)
        let sender: String
        do {
            sender = try runtime.composer().from.address.value
        } catch {
            return [Finding(level: .error, area: "mail", text: "\(error)")]
        }
        switch RelayProbe.run(SMTPSettings(runtime.configuration.smtp), sender: sender) {
        case .success(let summary):
            return [Finding(level: .ok, area: "relay", text: "\(url) \(summary)")]
        case .failure(let failure):
            let problem = RelayProblem(reason: failure.reason, since: Date())
            return [Finding(level: .error, area: "relay", text: "\(url): \(problem)")]
        }
    }

    static func links(_ configuration: HeraldConfiguration) -> [Finding] {
        let action = configuration.links.actionURL
        var findings: [Finding] = []
        if action.hasPrefix(configuration.server.publicURL + "/") {
            findings.append(Finding(level: .ok, area: "links", text: "action links open Herald's own pages at \(action)"))
        } else {
            findings.append(
                Finding(
                    level: .note, area: "links",
                    text: "action links open \(action), not this server's pages (\(configuration.server.publicURL)): "
                        + "whatever serves it must hand the codes to Herald"))
        }
        if let url = URLComponents(string: action), url.scheme == "http", let host = url.host, !Self.isLoopback(host) {
            findings.append(
                Finding(
                    level: .warn, area: "links",
                    text: "\(action) is plain http on a host other machines reach: links carry their codes in clear; "
                        + "serve Herald behind TLS and set server.publicUrl to its https address"))
        }
        if configuration.server.port == 0 && action.hasPrefix(configuration.server.publicURL + "/") {
            findings.append(
                Finding(
                    level: .warn, area: "links",
                    text: "server.port 0 picks a port at start-up that links cannot know: set server.publicUrl or a fixed port"))
        }
        return findings
    }

    static func keys(_ runtime: Runtime) -> [Finding] {
        let configuration = runtime.configuration
        var findings: [Finding] = []
        if !configuration.dkim.domain.isEmpty {
            do {
                _ = try runtime.composer()
                let selectors =
                    [configuration.dkim.selector] + (configuration.dkim.ed25519KeyFile.isEmpty ? [] : [configuration.dkim.ed25519Selector])
                let records = selectors.map { "\($0)._domainkey.\(configuration.dkim.domain)" }.joined(separator: " and ")
                findings.append(
                    Finding(level: .ok, area: "dkim", text: "signs as \(records) (`herald dkim records` prints what to publish)"))
            } catch {
                findings.append(Finding(level: .error, area: "dkim", text: "\(error)"))
            }
        }
        let path = configuration.signingKeyPath
        if FileManager.default.fileExists(atPath: path) {
            do {
                let file = try SigningKeyFile.openOrCreate(path: path)
                findings.append(Finding(level: .ok, area: "tokens", text: "\(path) holds \(file.liveKeys().count) live signing key(s)"))
            } catch {
                findings.append(Finding(level: .error, area: "tokens", text: "\(path): \(error)"))
            }
        } else {
            findings.append(Finding(level: .note, area: "tokens", text: "\(path) does not exist yet; `herald serve` creates it (0600)"))
        }
        if configuration.server.adminToken.isEmpty {
            findings.append(Finding(level: .note, area: "server", text: "no server.adminToken: admin calls and the /admin console are off"))
        }
        return findings
    }

    static func isLoopback(_ host: String) -> Bool {
        ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()) || host.hasPrefix("127.")
    }
}

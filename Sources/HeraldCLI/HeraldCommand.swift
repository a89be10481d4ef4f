import ArgumentParser
import Foundation
import HeraldCore
import HeraldStore

/// `herald`: queue, send and inspect Herald's action emails.
public struct HeraldCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Self-hosted email-link sign-in, verification and password-reset mail with a durable ledger.",
        version: HeraldCommand.version,
        subcommands: [
            MigrateCommand.self, SendCommand.self, WorkerCommand.self, MessagesCommand.self, TemplatesCommand.self, ServeCommand.self,
            AccountsCommand.self, CampaignCommand.self, AuditCommand.self, ThrottlesCommand.self, KeysCommand.self, DKIMCommand.self,
            SuppressionsCommand.self, BouncesCommand.self, WebhooksCommand.self, ConsoleCommand.self, CheckCommand.self,
        ]
    )

    public init() {}
}

/// Options every subcommand takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "Path of the YAML configuration file.")
    var config = "config/herald.yaml"
}

extension HeraldCommand {
    /// Parses the process arguments and runs the chosen command (the executable's only call).
    ///
    /// `serve` and `worker` catch stop signals before the arguments are even parsed, so one that arrives
    /// while they start up becomes a graceful shutdown of their service group (see `StopSignals`).
    public static func runFromCommandLine() async {
        // `--version` after any command (`herald worker --version`) answers as the bare `herald --version` does.
        let arguments = CommandLine.arguments.dropFirst().prefix { $0 != "--" }
        if arguments.contains("--version") {
            print(version)
            return
        }
        // What Herald creates is its operator's alone: the ledger and its WAL, keys, reports (0600; directories 0700).
        umask(0o077)
        let serviceGroupCommands = [ServeCommand.configuration.commandName, WorkerCommand.configuration.commandName]
        if let name = CommandLine.arguments.dropFirst().first, serviceGroupCommands.contains(name) {
            StopSignals.catchEarly()
        }
        await main()
    }
}

extension HeraldCommand {
    /// `herald 0.3.0 (ledger schema 20)`.
    static let version = "herald \(HeraldVersion.current) (ledger schema \(StoreOpener.schemaVersion))"
}

extension ActionKind {
    /// Parses a command-line action name, failing with one line that lists the valid names.
    init(argument: String) throws {
        guard let kind = ActionKind(rawValue: argument) else {
            throw HeraldError(
                .argumentError, "unknown action '\(argument)'; expected one of \(ActionKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = kind
    }
}

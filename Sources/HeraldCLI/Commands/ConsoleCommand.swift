import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald console`: what the `/admin` console keeps in the ledger.
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "What was done in the /admin console.",
        subcommands: [ConsoleActivity.self])
}

/// `herald console activity`: the action log, newest first, one line per change.
struct ConsoleActivity: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity",
        abstract: "Print the changes made in the console, newest first: when, who, what, to what, and how it ended.",
        discussion: """
            Who is the session's role and label: admin:1a2b3c4d, or read-only:9f8e7d6c for a refused change of a \
            session signed in with server.consoleReadToken. The result is ok, refused or failed.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "Done at or after this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var since: String?
    @Option(help: "Done at or before this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var until: String?
    @Option(help: "At most this many (1 to 10000).") var limit = 100
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("ID", key: "id"), .init("AT", key: "at"), .init("ACTOR", key: "actor"), .init("ACTION", key: "action"),
        .init("TARGET", key: "target"), .init("RESULT", key: "result"), .init("DETAIL", key: "detail"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            guard (1...10_000).contains(limit) else { throw HeraldError(.argumentError, "--limit must be between 1 and 10000") }
            let query = ConsoleActionQuery(
                since: try since.map { try TimeArgument.past($0, option: "--since") },
                until: try until.map { try TimeArgument.past($0, option: "--until") }, limit: limit)
            let console = try await Runtime.load(global).actions().console
            let writer = RowWriter(format: format, columns: Self.columns)
            for action in try console.actions(query) {
                let cells = [
                    "\(action.id)", action.at.iso8601, action.actor, action.action, action.target, action.result.rawValue, action.detail,
                ]
                try writer.write(cells, json: action)
            }
            writer.finish(summary: "\(writer.count) action(s)", empty: "(nothing done in the console)")
        }
    }
}

import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald messages`: the ledger, and the operator's second chances.
struct MessagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages", abstract: "List outbox rows; retry failed ones or cancel queued ones.",
        subcommands: [ListMessages.self, RetryMessages.self, CancelMessages.self], defaultSubcommand: ListMessages.self)
}

/// `herald messages [list]`: the ledger, streamed oldest first, as a table, JSON, JSON lines or CSV.
struct ListMessages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List outbox rows: action, recipient, state, attempts, last SMTP reply, times.",
        discussion: "Rows stream oldest first as they are read, however many match; a table is aligned on its first 1,000 rows.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only rows in this state: \(OutboxState.allCases.map(\.rawValue).joined(separator: ", ")).") var state: String?
    @Option(help: "Only rows for this address (recipient or account email).") var email: String?
    @Option(help: "Only rows of this action: \(ActionKind.allCases.map(\.rawValue).joined(separator: ", ")).") var action: String?
    @Option(help: "Only rows of this campaign (its id).") var campaign: Int64?
    @Option(help: "Only rows queued at or after this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var since: String?
    @Option(help: "Only rows queued at or before this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var until: String?
    @Option(help: "At most this many rows (the oldest that match).") var limit: Int?
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("ID", key: "id"), .init("ACTION", key: "action"), .init("RECIPIENT", key: "recipient"), .init("STATE", key: "state"),
        .init("TRIES", key: "attempts"), .init("LAST REPLY", key: "lastReply", maxWidth: 48), .init("QUEUED", key: "queuedAt"),
        .init("SENT", key: "sentAt"), .init("BOUNCED/COMPLAINED", key: "feedbackAt"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            if let limit, limit < 1 { throw HeraldError(.argumentError, "--limit: expected a positive number of rows") }
            var search = MessageSearch(email: try email.map { try EmailAddress($0) }, campaign: campaign)
            search.state = try state.map(OutboxState.init(argument:))
            search.kind = try action.map { try ActionKind(argument: $0) }
            search.since = try since.map { try TimeArgument.past($0, option: "--since") }
            search.until = try until.map { try TimeArgument.past($0, option: "--until") }
            let reports = try await Runtime.load(global).actions().reports
            let writer = RowWriter(format: format, columns: Self.columns)
            try reports.messages(search, limit: limit) { row in
                try writer.write(Self.cells(row), json: MessageJSON(row: row))
            }
            writer.finish(summary: "\(writer.count) message(s)")
        }
    }

    static func cells(_ row: OutboxMessage) -> [String?] {
        [
            "\(row.id)", row.kind.rawValue, row.recipient.value, row.state.rawValue, "\(row.attempts)", row.lastReply ?? "",
            row.queuedAt.iso8601, row.sentAt?.iso8601, row.feedbackAt?.iso8601,
        ]
    }
}

extension OutboxState {
    /// Parses a command-line state name, failing with one line that lists the valid names.
    init(argument: String) throws {
        guard let state = OutboxState(rawValue: argument) else {
            throw HeraldError(
                .argumentError, "unknown state '\(argument)'; expected one of \(OutboxState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = state
    }
}

/// The filter options `retry` and `cancel` share.
struct RequeueOptions: ParsableArguments {
    @Option(name: .customLong("state"), help: "Only rows in this state (repeatable).") var states: [String] = []
    @Option(help: "Only rows of this campaign.") var campaign: Int64?
    @Option(help: "Only rows for this address (recipient or account email).") var email: String?
    @Option(help: "Only rows queued at or after this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var since: String?
    @Flag(help: "Every matching row: needed when no --campaign, --email or --since narrows the change.") var all = false
    @Flag(help: "List what would change; change nothing.") var dryRun = false

    func filter() throws -> RequeueFilter {
        let states = try states.map(OutboxState.init(argument:))
        return RequeueFilter(
            states: Set(states), campaign: campaign, email: try email.map { try EmailAddress($0) },
            since: try since.map { try TimeArgument.past($0, option: "--since") }, all: all)
    }

    /// `retried 3 message(s): 4, 7, 9` (ids listed up to 100).
    func report(_ verb: String, _ result: RequeueResult) -> String {
        let shown = result.ids.prefix(100).map(String.init).joined(separator: ", ")
        let more = result.count > 100 ? ", …" : ""
        let head = result.dryRun ? "would have \(verb)" : verb
        return "\(head) \(result.count) message(s)\(result.ids.isEmpty ? "" : ": " + shown + more)"
    }
}

/// `herald messages retry`: failed (or dead, expired, cancelled) rows back in the queue with a fresh attempt budget.
struct RetryMessages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Requeue failed and dead rows (or --state expired|cancelled|possibly-delivered) with a fresh attempt budget and a new code.",
        discussion: "Each is recorded in the ledger (outbox_events); the old code dies. Rows of a cancelled campaign are left alone.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RequeueOptions

    func run() async throws {
        try await reportingErrors {
            let sending = try await Runtime.load(global).actions().sending
            print(options.report("retried", try sending.retryMessages(options.filter(), actor: "cli", dryRun: options.dryRun)))
        }
    }
}

/// `herald messages cancel`: queued or deferred rows that should not go after all.
struct CancelMessages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancel queued and deferred rows before they are sent (rows being sent finish).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var options: RequeueOptions

    func run() async throws {
        try await reportingErrors {
            let sending = try await Runtime.load(global).actions().sending
            print(options.report("cancelled", try sending.cancelMessages(options.filter(), actor: "cli", dryRun: options.dryRun)))
        }
    }
}

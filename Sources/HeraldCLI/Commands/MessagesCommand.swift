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

/// `herald messages [list]`: the ledger, as a table or JSON.
struct ListMessages: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List outbox rows: action, recipient, state, attempts, last SMTP reply, times.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only rows in this state: \(OutboxState.allCases.map(\.rawValue).joined(separator: ", ")).") var state: String?
    @Option(help: "Only rows for this address (recipient or account email).") var email: String?
    @Flag(help: "Print a JSON array instead of a table.") var json = false

    func run() async throws {
        try await reportingErrors {
            let filterState = try state.map { value in
                guard let state = OutboxState(rawValue: value) else {
                    throw HeraldError(
                        .argumentError, "unknown state '\(value)'; expected one of \(OutboxState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                return state
            }
            let filterEmail = try email.map { try EmailAddress($0) }
            let runtime = try await Runtime.load(global)
            let rows = try runtime.actions().reports.messages(state: filterState, email: filterEmail)
            print(json ? try Self.json(rows) : Self.table(rows))
        }
    }

    static func json(_ rows: [OutboxMessage]) throws -> String {
        try prettyJSON(rows.map(MessageJSON.init))
    }

    static func table(_ rows: [OutboxMessage]) -> String {
        let header = ["ID", "ACTION", "RECIPIENT", "STATE", "TRIES", "LAST REPLY", "QUEUED", "SENT", "BOUNCED/COMPLAINED"]
        let body = rows.map { row in
            [
                "\(row.id)", row.kind.rawValue, row.recipient.value, row.state.rawValue, "\(row.attempts)",
                String((row.lastReply ?? "").prefix(48)), row.queuedAt.iso8601, row.sentAt.map(\.iso8601) ?? "-",
                row.feedbackAt.map(\.iso8601) ?? "-",
            ]
        }
        let widths = header.indices.map { column in ([header] + body).map { $0[column].count }.max() ?? 0 }
        let lines = ([header] + body).map { cells in
            cells.enumerated().map { index, cell in cell.padding(toLength: widths[index], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        return (lines + ["\(rows.count) message(s)"]).joined(separator: "\n")
    }
}

/// The filter options `retry` and `cancel` share.
struct RequeueOptions: ParsableArguments {
    @Option(name: .customLong("state"), help: "Only rows in this state (repeatable).") var states: [String] = []
    @Option(help: "Only rows of this campaign.") var campaign: Int64?
    @Option(help: "Only rows for this address (recipient or account email).") var email: String?
    @Option(help: "Only rows queued at or after this time (ISO 8601, now, +10m).") var since: String?
    @Flag(help: "Every matching row: needed when no --campaign, --email or --since narrows the change.") var all = false
    @Flag(help: "List what would change; change nothing.") var dryRun = false

    func filter() throws -> RequeueFilter {
        let states = try states.map { value in
            guard let state = OutboxState(rawValue: value) else {
                throw HeraldError(
                    .argumentError, "unknown state '\(value)'; expected one of \(OutboxState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return state
        }
        return RequeueFilter(
            states: Set(states), campaign: campaign, email: try email.map { try EmailAddress($0) },
            since: try since.map(CreateCampaign.parseTime), all: all)
    }

    /// `retried 3 message(s): 4, 7, 9` (ids listed up to 100).
    func report(_ verb: String, _ result: RequeueResult) -> String {
        let shown = result.ids.prefix(100).map(String.init).joined(separator: ", ")
        let more = result.ids.count > 100 ? ", …" : ""
        let head = result.dryRun ? "would have \(verb)" : verb
        return "\(head) \(result.ids.count) message(s)\(result.ids.isEmpty ? "" : ": " + shown + more)"
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

import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald messages`: the ledger, as a table or JSON.
struct MessagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages", abstract: "List outbox rows: action, recipient, state, attempts, last SMTP reply, times.")

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
            let rows = try runtime.actions().messages(state: filterState, email: filterEmail)
            print(json ? try Self.json(rows) : Self.table(rows))
        }
    }

    static func json(_ rows: [OutboxMessage]) throws -> String {
        try prettyJSON(rows.map(MessageJSON.init))
    }

    static func table(_ rows: [OutboxMessage]) -> String {
        let header = ["ID", "ACTION", "RECIPIENT", "STATE", "TRIES", "LAST REPLY", "QUEUED", "SENT"]
        let body = rows.map { row in
            [
                "\(row.id)", row.kind.rawValue, row.recipient.value, row.state.rawValue, "\(row.attempts)",
                String((row.lastReply ?? "").prefix(48)), row.queuedAt.iso8601, row.sentAt.map(\.iso8601) ?? "-",
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

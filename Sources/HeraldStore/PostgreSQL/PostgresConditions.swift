import Foundation
import HeraldCore

/// The `WHERE` of a query over the outbox, built filter by filter with its named arguments: the message
/// list, the console's search, the audit, and retries and cancels share it.
struct PostgresConditions {
    /// The outbox's alias in the query (`o`), or empty.
    let table: String
    private(set) var conditions: [String] = []
    private(set) var arguments: SQLArguments = [:]

    init(table: String = "", arguments: SQLArguments = [:]) {
        self.table = table
        self.arguments = arguments
    }

    private func column(_ name: String) -> String { table.isEmpty ? name : "\(table).\(name)" }

    /// A condition of its own, with the arguments it names.
    mutating func add(_ condition: String, _ arguments: SQLArguments = [:]) {
        conditions.append(condition)
        self.arguments += arguments
    }

    mutating func state(_ state: OutboxState?) {
        if let state { add("\(column("state")) = :state", ["state": state.rawValue]) }
    }

    mutating func kind(_ kind: ActionKind?) {
        if let kind { add("\(column("action")) = :action", ["action": kind.rawValue]) }
    }

    /// Rows sent to the address or about its account.
    mutating func email(_ email: EmailAddress?) {
        if let email { add(PostgresStore.addressed(to: ":email", in: table), ["email": email.value]) }
    }

    mutating func campaign(_ campaign: Int64?) {
        if let campaign { add("\(column("campaign_id")) = :campaign", ["campaign": campaign]) }
    }

    /// Rows queued at or after `since`.
    mutating func queued(since: Date?) {
        if let since { add("\(column("queued_at")) >= :since", ["since": since.milliseconds]) }
    }

    /// `WHERE …`, or nothing when no filter applies.
    var whereClause: String { conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ") }
}

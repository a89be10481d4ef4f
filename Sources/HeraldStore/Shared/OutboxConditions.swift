import Foundation
import GRDB
import HeraldCore

/// The `WHERE` of a query over the outbox, built filter by filter with its named arguments: the message
/// list, the console's search, the audit, and retries and cancels share it, on both stores. The arguments are
/// kept as neutral `SQLValue`s; each store binds them (`statementArguments`, `sqlArguments`).
struct OutboxConditions {
    /// The outbox's alias in the query (`o`), or empty.
    let table: String
    private(set) var conditions: [String] = []
    private(set) var values: [String: SQLValue] = [:]

    init(table: String = "", arguments: [String: (any SQLBindable)?] = [:]) {
        self.table = table
        add(arguments)
    }

    private func column(_ name: String) -> String { table.isEmpty ? name : "\(table).\(name)" }

    private mutating func add(_ arguments: [String: (any SQLBindable)?]) {
        for (name, value) in arguments { values[name] = value?.sqlValue ?? .null }
    }

    /// A condition of its own, with the arguments it names.
    mutating func add(_ condition: String, _ arguments: [String: (any SQLBindable)?] = [:]) {
        conditions.append(condition)
        add(arguments)
    }

    mutating func state(_ state: OutboxState?) {
        if let state { add("\(column("state")) = :state", ["state": state.rawValue]) }
    }

    mutating func kind(_ kind: ActionKind?) {
        if let kind { add("\(column("action")) = :action", ["action": kind.rawValue]) }
    }

    /// Rows sent to the address or about its account.
    mutating func email(_ email: EmailAddress?) {
        if let email { add(Self.addressed(to: ":email", in: table), ["email": email.value]) }
    }

    mutating func campaign(_ campaign: Int64?) {
        if let campaign { add("\(column("campaign_id")) = :campaign", ["campaign": campaign]) }
    }

    /// Rows queued at or after `since`.
    mutating func queued(since: Date?) {
        if let since { add("\(column("queued_at")) >= :since", ["since": since.milliseconds]) }
    }

    /// Rows queued at or before `until`.
    mutating func queued(until: Date?) {
        if let until { add("\(column("queued_at")) <= :until", ["until": until.milliseconds]) }
    }

    /// A message search's filters: state, action, address, campaign and queue time.
    mutating func search(_ search: MessageSearch) {
        state(search.state)
        kind(search.kind)
        email(search.email)
        campaign(search.campaign)
        queued(since: search.since)
        queued(until: search.until)
        if let older = search.olderThan { add("\(column("id")) < :older", ["older": older]) }
        if let newer = search.newerThan { add("\(column("id")) > :newer", ["newer": newer]) }
    }

    /// `WHERE …`, or nothing when no filter applies.
    var whereClause: String { conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ") }

    /// The arguments, bound by SQLite.
    var statementArguments: StatementArguments { StatementArguments(values) }

    /// The arguments, bound by PostgreSQL.
    var sqlArguments: SQLArguments { SQLArguments(named: values) }

    /// The audit's filters over `outbox o`, with `:now`; `redeemed_at` and `expired` are columns of the audit's
    /// query.
    static func audit(_ filter: AuditFilter, now: Date) -> OutboxConditions {
        var conditions = Self(table: "o", arguments: ["now": now.milliseconds])
        conditions.email(filter.email)
        conditions.campaign(filter.campaign)
        conditions.kind(filter.kind)
        conditions.queued(since: filter.since)
        conditions.queued(until: filter.until)
        switch filter.status {
        case .redeemed: conditions.add("redeemed_at IS NOT NULL")
        case .unredeemed: conditions.add("o.sent_at IS NOT NULL AND redeemed_at IS NULL")
        case .expired: conditions.add("expired = 1")
        case nil: break
        }
        return conditions
    }

    /// Rows sent to `parameter`'s address or about its account: `recipient = p OR email = p`, written so that
    /// every branch has an index (SQLite v12; PostgreSQL `outbox_campaign_recipient`, `outbox_recipient`,
    /// `outbox_email`). A campaign row's email is its recipient.
    static func addressed(to parameter: String, in table: String = "") -> String {
        let column = { (name: String) in table.isEmpty ? name : "\(table).\(name)" }
        let (recipient, email, campaign) = (column("recipient"), column("email"), column("campaign_id"))
        return """
            ((\(recipient) = \(parameter) AND \(campaign) IS NOT NULL) OR (\(recipient) = \(parameter) AND \(campaign) IS NULL) \
            OR (\(email) = \(parameter) AND \(campaign) IS NULL AND \(email) <> \(recipient)))
            """
    }
}

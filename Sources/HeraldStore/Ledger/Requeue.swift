import Foundation
import HeraldCore

extension OutboxEngine {
    public func retry(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        // A cancelled campaign's rows would wait forever: the claim skips them.
        let sql = """
            SELECT id FROM outbox o WHERE \(condition)
              AND (o.campaign_id IS NULL OR o.campaign_id NOT IN (SELECT id FROM campaigns WHERE state = 'cancelled'))
            ORDER BY id
            """
        let change = RequeueChange(
            event: "retried", actor: actor, states: Self.stateList(filter.states),
            assignments: """
                state = 'queued', attempts = 0, possibly_delivered = 0, first_queued_at = COALESCE(first_queued_at, queued_at),
                    queued_at = ?1, next_attempt_at = ?1, due_at = ?1,
                    lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                """)
        return try self.change(sql, arguments, dryRun: dryRun, change, now: now)
    }

    public func cancel(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        let change = RequeueChange(
            event: "cancelled", actor: actor, states: "'queued','deferred'",
            assignments: "state = 'cancelled', lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2")
        return try self.change("SELECT id FROM outbox o WHERE \(condition) ORDER BY id", arguments, dryRun: dryRun, change, now: now)
    }

    /// Selects the rows, then (unless a dry run) applies `change` to them (`requeue`), in durable transactions.
    private func change(_ select: String, _ arguments: SQLArguments, dryRun: Bool, _ change: RequeueChange, now: Date) throws -> [Int64] {
        let at = now.milliseconds
        let ids = try read { db in try db.column(select, arguments, as: Int64.self) }
        if dryRun { return ids }
        // In transactions of 2,000 rows, so a million-row campaign never holds the ledger's writer (or a transaction)
        // for long; each update re-checks the row's state, so a row that moved on meanwhile is left alone.
        var changed: [Int64] = []
        for start in stride(from: 0, to: ids.count, by: 2000) {
            let batch = Array(ids[start..<min(start + 2000, ids.count)])
            changed += try writeDurably { db in try Self.requeue(batch, db, change, at: at) }
        }
        return changed
    }

    /// The states as an SQL list; `NULL` (matching nothing) when there are none.
    private static func stateList(_ states: Set<OutboxState>) -> String {
        states.isEmpty ? "NULL" : states.map { "'\($0.rawValue)'" }.sorted().joined(separator: ",")
    }

    /// The `WHERE` of a filter over `outbox o`.
    private static func requeueCondition(_ filter: RequeueFilter) -> (String, SQLArguments) {
        var conditions = OutboxConditions(table: "o")
        conditions.add("o.state IN (\(stateList(filter.states)))")
        conditions.campaign(filter.campaign)
        conditions.email(filter.email)
        conditions.queued(since: filter.since)
        conditions.queued(until: filter.until)
        conditions.kind(filter.kind)
        if let ids = filter.ids {
            switch dialect {
            case .sqlite: conditions.add("o.id IN (\(ids.map(String.init).joined(separator: ",")))")
            case .postgres: conditions.add("o.id = ANY(:ids::bigint[])", ["ids": ids])
            }
        }
        return (conditions.conditions.joined(separator: " AND "), conditions.sqlArguments)
    }
}

/// A retry or a cancel, as each engine's `requeue` applies it to a batch of rows: the statement is
/// `UPDATE outbox SET <assignments> WHERE <the rows> AND state IN (<states>)`, with `?1` now and `?2` the reply.
struct RequeueChange: Sendable {
    /// The `outbox_events` kind: `retried`, `cancelled`.
    let event: String
    let actor: String
    /// The states a row must still be in, as an SQL list.
    let states: String
    let assignments: String

    /// The row's new `last_reply`.
    var reply: String { "\(event) by \(actor)" }
}

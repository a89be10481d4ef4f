import Foundation
import HeraldCore

extension PostgresStore {
    public func retry(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        // A cancelled campaign's rows would wait forever: the claim skips them.
        let sql = """
            SELECT id FROM outbox o WHERE \(condition)
              AND (o.campaign_id IS NULL OR o.campaign_id NOT IN (SELECT id FROM campaigns WHERE state = 'cancelled'))
            ORDER BY id
            """
        return try change(
            sql, arguments, dryRun: dryRun, event: "retried", actor: actor, now: now,
            update: """
                UPDATE outbox SET state = 'queued', attempts = 0, first_queued_at = COALESCE(first_queued_at, queued_at),
                    queued_at = ?1, next_attempt_at = ?1, due_at = ?1,
                    lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                WHERE id = ANY(?3::bigint[]) AND state IN (\(Self.stateList(filter.states)))
                RETURNING id
                """)
    }

    public func cancel(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        return try change(
            "SELECT id FROM outbox o WHERE \(condition) ORDER BY id", arguments, dryRun: dryRun, event: "cancelled", actor: actor, now: now,
            update: """
                UPDATE outbox SET state = 'cancelled', lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                WHERE id = ANY(?3::bigint[]) AND state IN ('queued','deferred')
                RETURNING id
                """)
    }

    /// Selects the rows, then (unless a dry run) updates them with `update` (`?1` now, `?2` the reply, `?3` the
    /// ids; it returns the ids it changed), voids their unredeemed codes and records the events, in durable
    /// transactions.
    private func change(
        _ select: String, _ arguments: SQLArguments, dryRun: Bool, event: String, actor: String, now: Date, update: String
    ) throws -> [Int64] {
        let at = now.milliseconds
        let ids = try pool.read { db in try db.fetchColumn(select, arguments, as: Int64.self) }
        if dryRun { return ids }
        // In transactions of 2,000 rows, so a million-row campaign never holds long transactions; each update
        // re-checks the row's state, so a row that moved on meanwhile is left alone.
        var changed: [Int64] = []
        for start in stride(from: 0, to: ids.count, by: 2000) {
            let batch = Array(ids[start..<min(start + 2000, ids.count)])
            changed += try writeDurably { db in try apply(batch, db, at, event: event, actor: actor, update: update) }
        }
        return changed
    }

    /// Updates the rows of one batch in one statement each for the rows, their codes and their events; returns
    /// the ids changed, in id order.
    private func apply(
        _ ids: [Int64], _ db: PostgresSession, _ at: Int64, event: String, actor: String, update: String
    ) throws -> [Int64] {
        let reply = "\(event) by \(actor)"
        if event == "retried" { try Self.notifyQueued(db) }
        let changed = try db.fetchColumn(update, [at, reply, ids], as: Int64.self).sorted()
        guard !changed.isEmpty else { return [] }
        try db.execute(
            """
            UPDATE action_codes SET superseded_at = COALESCE(superseded_at, ?1::bigint), expires_at = LEAST(expires_at, ?1::bigint)
            WHERE outbox_id = ANY(?2::bigint[]) AND redeemed_at IS NULL
            """, [at, changed])
        try db.execute(
            """
            INSERT INTO outbox_events (outbox_id, kind, actor, at)
            SELECT e.id, ?2::text, ?3::text, ?4::bigint FROM unnest(?1::bigint[]) WITH ORDINALITY AS e(id, n) ORDER BY e.n
            """, [changed, event, actor, at])
        return changed
    }

    /// The states as an SQL list; `NULL` (matching nothing, as SQLite's empty `IN ()` does) when there are none.
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
        if let ids = filter.ids {
            conditions.add("o.id = ANY(:ids::bigint[])", ["ids": ids])
        }
        return (conditions.conditions.joined(separator: " AND "), conditions.sqlArguments)
    }
}

import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func retry(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        // A cancelled campaign's rows would wait forever: the claim skips them.
        let sql = """
            SELECT id FROM outbox o WHERE \(condition)
              AND (o.campaign_id IS NULL OR o.campaign_id NOT IN (SELECT id FROM campaigns WHERE state = 'cancelled'))
            ORDER BY id
            """
        return try change(sql, arguments, dryRun: dryRun, event: "retried", actor: actor, now: now) { db, at in
            try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'queued', attempts = 0, first_queued_at = COALESCE(first_queued_at, queued_at), queued_at = ?1, next_attempt_at = ?1, due_at = ?1,
                        lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                    WHERE id = ?3 AND state IN (\(Self.stateList(filter.states)))
                    """)
        }
    }

    public func cancel(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> [Int64] {
        let (condition, arguments) = Self.requeueCondition(filter)
        return try change(
            "SELECT id FROM outbox o WHERE \(condition) ORDER BY id", arguments, dryRun: dryRun, event: "cancelled", actor: actor, now: now
        ) {
            db, at in
            try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'cancelled', lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                    WHERE id = ?3 AND state IN ('queued','deferred')
                    """)
        }
    }

    /// Selects the rows, then (unless a dry run) updates each with `update`'s statement (`?1` now, `?2` the
    /// reply, `?3` the id), voids its unredeemed codes and records the event, all in one durable transaction.
    private func change(
        _ select: String, _ arguments: StatementArguments, dryRun: Bool, event: String, actor: String, now: Date,
        update: (Database, Int64) throws -> Statement
    ) throws -> [Int64] {
        let at = now.milliseconds
        let ids = try pool.read { db in try Int64.fetchAll(db, sql: select, arguments: arguments) }
        if dryRun { return ids }
        // In transactions of 2,000 rows, so a million-row campaign never holds the ledger's writer for long; each
        // update re-checks the row's state, so a row that moved on meanwhile is left alone.
        var changed: [Int64] = []
        for start in stride(from: 0, to: ids.count, by: 2000) {
            let batch = Array(ids[start..<min(start + 2000, ids.count)])
            changed += try writeDurably { db in try apply(batch, db, at, event: event, actor: actor, update: update) }
        }
        return changed
    }

    private func apply(
        _ ids: [Int64], _ db: Database, _ at: Int64, event: String, actor: String, update: (Database, Int64) throws -> Statement
    ) throws -> [Int64] {
        let statement = try update(db, at)
        let voidCodes = try db.cachedStatement(
            sql: """
                UPDATE action_codes SET superseded_at = COALESCE(superseded_at, ?1), expires_at = MIN(expires_at, ?1)
                WHERE outbox_id = ?2 AND redeemed_at IS NULL
                """)
        let record = try db.cachedStatement(
            sql: "INSERT INTO outbox_events (outbox_id, kind, actor, at) VALUES (?, ?, ?, ?)")
        let reply = "\(event) by \(actor)"
        var changed: [Int64] = []
        for id in ids {
            try statement.execute(arguments: [at, reply, id])
            guard db.changesCount > 0 else { continue }
            try voidCodes.execute(arguments: [at, id])
            try record.execute(arguments: [id, event, actor, at])
            changed.append(id)
        }
        return changed
    }

    private static func stateList(_ states: Set<OutboxState>) -> String {
        states.map { "'\($0.rawValue)'" }.sorted().joined(separator: ",")
    }

    /// The `WHERE` of a filter over `outbox o`.
    private static func requeueCondition(_ filter: RequeueFilter) -> (String, StatementArguments) {
        var conditions = OutboxConditions(table: "o")
        conditions.add("o.state IN (\(stateList(filter.states)))")
        conditions.campaign(filter.campaign)
        conditions.email(filter.email)
        conditions.queued(since: filter.since)
        if let ids = filter.ids {
            conditions.add("o.id IN (\(ids.map(String.init).joined(separator: ",")))")
        }
        return (conditions.conditions.joined(separator: " AND "), conditions.statementArguments)
    }
}

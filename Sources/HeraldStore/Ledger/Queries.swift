import Foundation
import HeraldCore

/// The ledger's read-only queries: messages, attempts, queue status and counts.
extension LedgerEngine {
    /// Outbox rows in id order, optionally filtered by state and recipient.
    public func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage] {
        var conditions = OutboxConditions()
        conditions.state(state)
        conditions.email(email)
        let (filter, arguments) = (conditions.whereClause, conditions.sqlArguments)
        let sql = "SELECT * FROM outbox \(filter) ORDER BY id" + (limit.map { " LIMIT \($0)" } ?? "")
        return try read { db in
            var cache = Records.MessageDecoding()
            return try db.fetchAll(sql, arguments).map { try Records.message($0, cache: &cache) }
        }
    }

    /// Streams the rows matching `search` to `each`, oldest first, at most `limit`, in bounded memory: pages by id
    /// through one read transaction's snapshot, as the audit does.
    public func messages(_ search: MessageSearch, limit: Int?, each: (OutboxMessage) throws -> Void) throws {
        let pageSize = 1000
        try read { db in
            var cache = Records.MessageDecoding()
            var after: Int64?
            var left = limit ?? Int.max
            while left > 0 {
                let wanted = min(pageSize, left)
                var conditions = OutboxConditions(arguments: ["limit": wanted])
                conditions.search(search)
                if let after { conditions.add("id > :after", ["after": after]) }
                let sql = "SELECT * FROM outbox \(conditions.whereClause) ORDER BY id LIMIT :limit"
                let rows = try db.fetchAll(sql, conditions.sqlArguments).map { try Records.message($0, cache: &cache) }
                for row in rows { try each(row) }
                left -= rows.count
                guard rows.count == wanted, let last = rows.last else { return }
                after = last.id
            }
        }
    }

    /// The recorded attempts of one row, oldest first.
    public func attempts(outboxID: Int64) throws -> [DeliveryAttempt] {
        try read { db in
            try db.fetchAll("SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", [outboxID]).map(Records.attempt)
        }
    }

    /// How much work is pending and when the next piece is due.
    public func queueStatus() throws -> QueueStatus {
        try read { db in
            // The COALESCEs make the next due time the earlier of the two, or the one there is.
            let nextDue = db.dialect.least("COALESCE(s.lease, s.due)", "COALESCE(s.due, s.lease)")
            guard
                let row = try db.row(
                    """
                    SELECT s.waiting + s.sending AS pending, s.sending, \(nextDue) AS next_due
                    FROM (SELECT (SELECT COUNT(*) FROM outbox WHERE state IN ('queued','deferred')) AS waiting,
                                 (SELECT COUNT(*) FROM outbox WHERE state = 'sending') AS sending,
                                 (SELECT MIN(lease_until) FROM outbox WHERE state = 'sending') AS lease,
                                 (SELECT MIN(next_attempt_at) FROM outbox WHERE state IN ('queued','deferred')) AS due) AS s
                    """)
            else { return QueueStatus(pending: 0, sending: 0, nextDue: nil) }
            return QueueStatus(
                pending: row["pending"], sending: row["sending"], nextDue: (row["next_due"] as Int64?).map(Date.init(milliseconds:)))
        }
    }

    /// Counts rows per state.
    public func stateCounts() throws -> [OutboxState: Int] {
        try read { db in
            Records.stateCounts(try db.fetchAll("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state", []))
        }
    }

    /// One pass over `outbox`, grouped; at most states × actions × (campaigns + 1) rows come back, in SQLite's
    /// grouping order (by state, action, then campaign with no campaign first).
    public func outboxCounts() throws -> [OutboxCount] {
        try read { db in
            let bytewise = db.dialect.bytewise
            let rows = try db.rows(
                """
                SELECT state, action, campaign_id, COUNT(*) AS n FROM outbox GROUP BY state, action, campaign_id
                ORDER BY state\(bytewise), action\(bytewise), campaign_id NULLS FIRST
                """)
            return rows.compactMap { row in
                guard let state = OutboxState(rawValue: row["state"]), let kind = ActionKind(rawValue: row["action"]) else { return nil }
                return OutboxCount(state: state, kind: kind, campaignID: row["campaign_id"], count: row["n"])
            }
        }
    }
}

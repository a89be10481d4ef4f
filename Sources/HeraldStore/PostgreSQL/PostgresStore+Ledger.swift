import Foundation
import HeraldCore

extension PostgresStore {
    /// Outbox rows in id order, optionally filtered by state and recipient.
    public func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage] {
        var conditions = OutboxConditions()
        conditions.state(state)
        conditions.email(email)
        let (filter, arguments) = (conditions.whereClause, conditions.sqlArguments)
        let sql = "SELECT * FROM outbox \(filter) ORDER BY id" + (limit.map { " LIMIT \($0)" } ?? "")
        return try pool.read { db in
            var cache = Records.MessageDecoding()
            return try db.fetchAll(sql, arguments).map { try Records.message($0, cache: &cache) }
        }
    }

    /// The recorded attempts of one row, oldest first.
    public func attempts(outboxID: Int64) throws -> [DeliveryAttempt] {
        try pool.read { db in
            try db.fetchAll("SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", [outboxID]).map(Records.attempt)
        }
    }

    /// How much work is pending and when the next piece is due.
    public func queueStatus() throws -> QueueStatus {
        try pool.read { db in
            // LEAST ignores NULLs where SQLite's scalar MIN does not; the COALESCEs make both give the same answer.
            guard
                let row = try db.fetchOne(
                    """
                    SELECT s.waiting + s.sending AS pending, s.sending,
                           LEAST(COALESCE(s.lease, s.due), COALESCE(s.due, s.lease)) AS next_due
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
        try pool.read { db in
            Records.stateCounts(try db.fetchAll("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state"))
        }
    }
}

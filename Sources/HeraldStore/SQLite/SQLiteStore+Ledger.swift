import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Outbox rows in id order, optionally filtered by state and recipient.
    public func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage] {
        var conditions = OutboxConditions()
        conditions.state(state)
        conditions.email(email)
        let (filter, arguments) = (conditions.whereClause, conditions.statementArguments)
        let sql = "SELECT * FROM outbox \(filter) ORDER BY id" + (limit.map { " LIMIT \($0)" } ?? "")
        return try pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map(Records.message)
        }
    }

    /// The recorded attempts of one row, oldest first.
    public func attempts(outboxID: Int64) throws -> [DeliveryAttempt] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id
                    """,
                arguments: [outboxID]
            ).map(Records.attempt)
        }
    }

    /// How much work is pending and when the next piece is due.
    public func queueStatus() throws -> QueueStatus {
        try pool.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT waiting + sending AS pending, sending,
                           MIN(COALESCE(lease, due), COALESCE(due, lease)) AS next_due
                    FROM (SELECT (SELECT COUNT(*) FROM outbox WHERE state IN ('queued','deferred')) AS waiting,
                                 (SELECT COUNT(*) FROM outbox WHERE state = 'sending') AS sending,
                                 (SELECT MIN(lease_until) FROM outbox WHERE state = 'sending') AS lease,
                                 (SELECT MIN(next_attempt_at) FROM outbox WHERE state IN ('queued','deferred')) AS due)
                    """)!
            return QueueStatus(
                pending: row["pending"], sending: row["sending"], nextDue: (row["next_due"] as Int64?).map(Date.init(milliseconds:)))
        }
    }

    /// Counts rows per state.
    public func stateCounts() throws -> [OutboxState: Int] {
        try pool.read { db in
            Records.stateCounts(try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM outbox GROUP BY state"))
        }
    }
}

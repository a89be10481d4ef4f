import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Outbox rows in id order, optionally filtered by state and recipient.
    public func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage] {
        var conditions = OutboxConditions()
        conditions.state(state)
        conditions.email(email)
        let (filter, arguments) = (conditions.whereClause, conditions.arguments)
        let sql = "SELECT * FROM outbox \(filter) ORDER BY id" + (limit.map { " LIMIT \($0)" } ?? "")
        return try pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map(Records.message)
        }
    }

    /// Rows sent to `parameter`'s address or about its account: `recipient = p OR email = p`, written so that
    /// every branch has an index (v12). A campaign row's email is its recipient.
    static func addressed(to parameter: String, in table: String = "") -> String {
        let column = { (name: String) in table.isEmpty ? name : "\(table).\(name)" }
        let (recipient, email, campaign) = (column("recipient"), column("email"), column("campaign_id"))
        return """
            ((\(recipient) = \(parameter) AND \(campaign) IS NOT NULL) OR (\(recipient) = \(parameter) AND \(campaign) IS NULL) \
            OR (\(email) = \(parameter) AND \(campaign) IS NULL AND \(email) <> \(recipient)))
            """
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
            ).map { row in
                DeliveryAttempt(
                    outboxID: row["outbox_id"], attempt: row["attempt"], outcome: row["outcome"],
                    replyCode: row["reply_code"], replyText: row["reply_text"],
                    startedAt: Date(milliseconds: row["started_at"]), finishedAt: Date(milliseconds: row["finished_at"]))
            }
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
            var counts: [OutboxState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM outbox GROUP BY state") {
                if let state = OutboxState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }
}

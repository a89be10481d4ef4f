import Foundation
import HeraldCore

extension PostgresStore {
    /// Outbox rows in id order, optionally filtered by state and recipient.
    public func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage] {
        var conditions = PostgresConditions()
        conditions.state(state)
        conditions.email(email)
        let (filter, arguments) = (conditions.whereClause, conditions.arguments)
        let sql = "SELECT * FROM outbox \(filter) ORDER BY id" + (limit.map { " LIMIT \($0)" } ?? "")
        return try pool.read { db in
            var cache = PostgresRecords.MessageDecoding()
            return try db.fetchAll(sql, arguments).map { try PostgresRecords.message($0, cache: &cache) }
        }
    }

    /// Rows sent to `parameter`'s address or about its account: `recipient = p OR email = p`, written so that
    /// every branch has an index (`outbox_campaign_recipient`, `outbox_recipient`, `outbox_email`). A campaign
    /// row's email is its recipient.
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
            try db.fetchAll("SELECT * FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", [outboxID]).map { row in
                let startedAt: Int64 = row["started_at"]
                let finishedAt: Int64 = row["finished_at"]
                return DeliveryAttempt(
                    outboxID: row["outbox_id"], attempt: row["attempt"], outcome: row["outcome"],
                    replyCode: row["reply_code"], replyText: row["reply_text"],
                    startedAt: Date(milliseconds: startedAt), finishedAt: Date(milliseconds: finishedAt))
            }
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
            var counts: [OutboxState: Int] = [:]
            for row in try db.fetchAll("SELECT state, COUNT(*) AS n FROM outbox GROUP BY state") {
                if let state = OutboxState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }
}

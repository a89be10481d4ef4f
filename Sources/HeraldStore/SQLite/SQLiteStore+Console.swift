import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func searchMessages(_ search: MessageSearch, limit: Int) throws -> [OutboxMessage] {
        var conditions = OutboxConditions(arguments: ["limit": limit])
        conditions.state(search.state)
        conditions.kind(search.kind)
        conditions.email(search.email)
        conditions.campaign(search.campaign)
        let (filter, arguments) = (conditions.whereClause, conditions.statementArguments)
        return try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM outbox \(filter) ORDER BY id DESC LIMIT :limit", arguments: arguments)
                .map(Records.message)
        }
    }

    public func history(outboxID id: Int64) throws -> MessageHistory? {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE id = ?", arguments: [id]) else { return nil }
            let message = try Records.message(row)
            let firstQueued = (row["first_queued_at"] as Int64?).map(Date.init(milliseconds:)) ?? message.queuedAt
            var events = [MessageHistory.Event(kind: "queued", at: firstQueued)]
            events += try Row.fetchAll(
                db,
                sql: "SELECT finished_at, outcome, reply_code, reply_text FROM delivery_attempts WHERE outbox_id = ? ORDER BY id",
                arguments: [id]
            ).map { row in
                .init(
                    kind: "attempt", at: Date(milliseconds: row["finished_at"]), outcome: row["outcome"], replyCode: row["reply_code"],
                    detail: row["reply_text"])
            }
            events += try Row.fetchAll(
                db, sql: "SELECT kind, actor, at FROM outbox_events WHERE outbox_id = ? ORDER BY id", arguments: [id]
            ).map { row in .init(kind: row["kind"], at: Date(milliseconds: row["at"]), outcome: row["actor"]) }
            events += try Row.fetchAll(
                db,
                sql: """
                    SELECT e.kind, e.at, e.detail FROM link_events e JOIN action_codes c ON c.id = e.code_id
                    WHERE c.outbox_id = ? ORDER BY e.id
                    """,
                arguments: [id]
            ).map { row in .init(kind: row["kind"], at: Date(milliseconds: row["at"]), detail: row["detail"]) }
            events += try Row.fetchAll(
                db, sql: "SELECT kind, status, diagnostic, received_at FROM mail_feedback WHERE outbox_id = ? ORDER BY id",
                arguments: [id]
            ).map { row in
                .init(kind: row["kind"], at: Date(milliseconds: row["received_at"]), outcome: row["status"], detail: row["diagnostic"])
            }
            // A stable sort: events at the same millisecond keep the order of the tables above.
            let ordered = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
            return MessageHistory(message: message, events: ordered)
        }
    }

    public func sendActivity(since: Date) throws -> [SendActivity] {
        let bucket = Int64(SendActivity.bucketSeconds * 1000)
        let since = since.milliseconds
        return try pool.read { db in
            let first = try firstAttempt(finishedAtOrAfter: since, db)
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT finished_at / :bucket AS bucket, outcome,
                           CASE WHEN reply_code IS NULL THEN 'connection' ELSE (reply_code / 100) || 'xx' END AS class,
                           COUNT(*) AS n
                    FROM delivery_attempts WHERE id >= :first AND finished_at >= :since
                    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
                    """,
                arguments: ["bucket": bucket, "first": first, "since": since]
            ).map { row in
                SendActivity(
                    bucket: Date(milliseconds: (row["bucket"] as Int64) * bucket), outcome: row["outcome"], replyClass: row["class"],
                    count: row["n"])
            }
        }
    }

    /// The first attempt id worth reading for attempts finished at or after `since`: a binary search over ids,
    /// which grow with time (finish times are out of order only among concurrent connections, so the search
    /// starts a minute early), instead of an index on `finished_at` that every send would pay for.
    private func firstAttempt(finishedAtOrAfter since: Int64, _ db: Database) throws -> Int64 {
        let target = since - 60_000
        guard var low = try Int64.fetchOne(db, sql: "SELECT MIN(id) FROM delivery_attempts"),
            var high = try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM delivery_attempts")
        else { return 0 }
        let probe = try db.cachedStatement(sql: "SELECT finished_at FROM delivery_attempts WHERE id >= ? ORDER BY id LIMIT 1")
        while low < high {
            let middle = low + (high - low) / 2
            let finished = try Int64.fetchOne(probe, arguments: [middle]) ?? Int64.max
            if finished < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

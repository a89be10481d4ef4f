import Foundation
import HeraldCore

extension LedgerEngine {
    public func searchMessages(_ search: MessageSearch, limit: Int) throws -> [OutboxMessage] {
        var conditions = OutboxConditions(arguments: ["limit": limit])
        conditions.search(search)
        let (filter, arguments) = (conditions.whereClause, conditions.sqlArguments)
        // The page before a cursor is the nearest rows above it: read upwards from it, then show newest first.
        let upwards = search.newerThan != nil && search.olderThan == nil
        let rows = try read { db in
            var cache = Records.MessageDecoding()
            return try db.fetchAll("SELECT * FROM outbox \(filter) ORDER BY id \(upwards ? "ASC" : "DESC") LIMIT :limit", arguments)
                .map { try Records.message($0, cache: &cache) }
        }
        return upwards ? Array(rows.reversed()) : rows
    }

    public func history(outboxID id: Int64) throws -> MessageHistory? {
        try read { db in
            guard let plain = try db.fetchOne("SELECT * FROM outbox WHERE id = ?", [id]) else { return nil }
            let message = try Records.message(plain)
            let firstQueued = (RecordRow(plain)["first_queued_at"] as Int64?).map(Date.init(milliseconds:)) ?? message.queuedAt
            var events = [MessageHistory.Event(kind: "queued", at: firstQueued)]
            events += try db.rows(
                "SELECT finished_at, outcome, reply_code, reply_text FROM delivery_attempts WHERE outbox_id = ? ORDER BY id", [id]
            ).map { row in
                MessageHistory.Event(
                    kind: "attempt", at: Date(milliseconds: row["finished_at"]), outcome: row["outcome"] as String?,
                    replyCode: row["reply_code"] as Int?, detail: row["reply_text"] as String?)
            }
            events += try db.rows("SELECT kind, actor, at FROM outbox_events WHERE outbox_id = ? ORDER BY id", [id]).map { row in
                MessageHistory.Event(kind: row["kind"] as String, at: Date(milliseconds: row["at"]), outcome: row["actor"] as String?)
            }
            events += try db.rows(
                """
                SELECT e.kind, e.at, e.detail FROM link_events e JOIN action_codes c ON c.id = e.code_id
                WHERE c.outbox_id = ? ORDER BY e.id
                """, [id]
            ).map { row in
                MessageHistory.Event(kind: row["kind"] as String, at: Date(milliseconds: row["at"]), detail: row["detail"] as String?)
            }
            events += try db.rows(
                "SELECT kind, status, diagnostic, received_at FROM mail_feedback WHERE outbox_id = ? ORDER BY id", [id]
            ).map { row in
                MessageHistory.Event(
                    kind: row["kind"] as String, at: Date(milliseconds: row["received_at"]), outcome: row["status"] as String?,
                    detail: row["diagnostic"] as String?)
            }
            // A stable sort: events at the same millisecond keep the order of the tables above.
            let ordered = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
            return MessageHistory(message: message, events: ordered)
        }
    }

    public func feedbackCounts(since: Date) throws -> [MailFeedback.Kind: Int] {
        let since = since.milliseconds
        return try read { db in
            let first = try Self.firstRow(of: "mail_feedback", at: "received_at", since: since, db)
            var counts: [MailFeedback.Kind: Int] = [:]
            for row in try db.rows(
                "SELECT kind, COUNT(*) AS n FROM mail_feedback WHERE id >= :first AND received_at >= :since GROUP BY kind",
                ["first": first, "since": since])
            {
                if let kind = MailFeedback.Kind(rawValue: row["kind"] as String) { counts[kind] = row["n"] as Int }
            }
            return counts
        }
    }

    /// The first id of `table` worth reading for rows whose `column` (a time) is at or after `since`: a binary
    /// search over ids, which grow with time (times are out of order only among concurrent writers, so the search
    /// starts a minute early), instead of an index on the time that every write would pay for.
    static func firstRow(of table: String, at column: String, since: Int64, _ db: Session) throws -> Int64 {
        let target = since - 60_000
        guard let bounds = try db.row("SELECT MIN(id) AS low, MAX(id) AS high FROM \(table)"),
            var low = bounds["low"] as Int64?, var high = bounds["high"] as Int64?
        else { return 0 }
        while low < high {
            let middle = low + (high - low) / 2
            let time =
                try db.value("SELECT \(column) FROM \(table) WHERE id >= ? ORDER BY id LIMIT 1", [middle], as: Int64.self)
                ?? Int64.max
            if time < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

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
            var waiting = 0
            var sending = 0
            for tally in try Self.tallies(db) {
                if tally.state == OutboxState.sending.rawValue { sending += tally.count }
                if tally.state == OutboxState.queued.rawValue || tally.state == OutboxState.deferred.rawValue { waiting += tally.count }
            }
            // The COALESCEs make the next due time the earlier of the two, or the one there is.
            let nextDue = db.dialect.least("COALESCE(s.lease, s.due)", "COALESCE(s.due, s.lease)")
            let row = try db.row(
                """
                SELECT \(nextDue) AS next_due
                FROM (SELECT (SELECT MIN(lease_until) FROM outbox WHERE state = 'sending') AS lease,
                             (SELECT MIN(next_attempt_at) FROM outbox WHERE state IN ('queued','deferred')) AS due) AS s
                """)
            return QueueStatus(
                pending: waiting + sending, sending: sending,
                nextDue: (row?["next_due"] as Int64?).map(Date.init(milliseconds:)))
        }
    }

    /// Counts rows per state, with those message retention pruned in the state they left in (so a worker's progress,
    /// which counts what grew, keeps counting while its housekeeper prunes).
    public func stateCounts() throws -> [OutboxState: Int] {
        try read { db in
            var counts: [OutboxState: Int] = [:]
            for tally in try Self.tallies(db) + Self.prunedTallies(db) {
                if let state = OutboxState(rawValue: tally.state) { counts[state, default: 0] += tally.count }
            }
            return counts
        }
    }

    /// Rows per state, action and campaign, read from the tallies (a few rows whatever the outbox holds), ordered by
    /// state, action, then campaign with no campaign first.
    public func outboxCounts() throws -> [OutboxCount] {
        try read { db in
            try Self.tallies(db).compactMap { tally -> OutboxCount? in
                guard let state = OutboxState(rawValue: tally.state), let kind = ActionKind(rawValue: tally.action) else { return nil }
                return OutboxCount(state: state, kind: kind, campaignID: tally.campaign == 0 ? nil : tally.campaign, count: tally.count)
            }
            .sorted { ($0.state.rawValue, $0.kind.rawValue, $0.campaignID ?? 0) < ($1.state.rawValue, $1.kind.rawValue, $1.campaignID ?? 0) }
        }
    }

    /// The outbox's tallies, of every campaign or of one; those at zero are left out. On PostgreSQL with the deltas
    /// `foldTallies` has not folded yet.
    static func tallies(_ db: Session, campaign: Int64? = nil) throws -> [OutboxTally] {
        let only = campaign == nil ? "" : "WHERE campaign = :campaign"
        let arguments: SQLArguments = campaign == nil ? [:] : ["campaign": campaign]
        let sql =
            switch db.dialect {
            case .sqlite: "SELECT state, action, campaign, n FROM outbox_tallies \(only)"
            case .postgres:
                """
                SELECT state, action, campaign, CAST(SUM(n) AS BIGINT) AS n FROM (
                    SELECT state, action, campaign, n FROM outbox_tallies \(only)
                    UNION ALL SELECT state, action, campaign, n FROM outbox_tally_deltas \(only)) AS t
                GROUP BY state, action, campaign
                """
            }
        return try db.rows(sql, arguments).compactMap { row in
            let count = row["n"] as Int
            guard count != 0 else { return nil }
            return OutboxTally(state: row["state"], action: row["action"], campaign: row["campaign"], count: count)
        }
    }
}

/// One tally of the outbox (migration v29): its rows of a state, action and campaign (0: none).
struct OutboxTally {
    var state: String
    var action: String
    var campaign: Int64
    var count: Int
}

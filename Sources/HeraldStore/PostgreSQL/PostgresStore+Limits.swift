import Foundation
import HeraldCore

extension PostgresStore {
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        let at = now.milliseconds
        let key = request.recipient.throttleKey
        try pool.write(.readCommitted) { db in
            if let throttle {
                try Self.lockThrottle(db, key: key)
                try Self.checkCooldown(db, throttle, key: key, at: at, SendLimits.suppressedCooldown(request, key: key, at: at))
            }
            if let quota { try Self.charge(db, quota, at: at) }
            try db.execute(
                "INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) VALUES (?, ?, ?, ?)",
                [request.kind.rawValue, key, reason.rawValue, at])
        }
    }

    /// Refuses a request inside the cooldown or over the daily cap; `sql` selects `sent` and `latest` for `key`.
    static func checkCooldown(
        _ db: PostgresSession, _ throttle: SendThrottle, key: String, at: Int64, _ query: (sql: String, values: [SQLValue])
    ) throws {
        // An aggregate without GROUP BY always returns its one row.
        guard let row = try db.fetchOne(query.sql, SQLArguments(query.values)) else { return }
        try SendLimits.checkCooldown(throttle, key: key, at: at, sent: row["sent"], latest: row["latest"])
    }

    /// Counts one email against the project's and the account's hourly quotas, refusing it if either is spent.
    ///
    /// Counts first, then checks: the upsert locks the counter row until the transaction ends, so concurrent
    /// requests from any node count one after another at any isolation level, and a refusal throws, which rolls
    /// its own count back.
    static func charge(_ db: PostgresSession, _ quota: SendQuota, at: Int64) throws {
        let hour = at / 3_600_000
        for (scope, key, limit) in SendLimits.quotas(quota) {
            let counted =
                try db.fetchValue(
                    """
                    INSERT INTO send_counts (scope, key, hour, count) VALUES (?, ?, ?, 1)
                    ON CONFLICT (scope, key, hour) DO UPDATE SET count = send_counts.count + 1
                    RETURNING count
                    """, [scope, key, hour], as: Int.self) ?? 1
            try SendLimits.checkQuota(scope: scope, key: key, limit: limit, count: counted - 1)
        }
    }

    /// Makes concurrent requests for one recipient take turns (a transaction-scoped advisory lock on its throttle
    /// key), so the second sees the first's row when it checks the cooldown and the daily cap.
    static func lockThrottle(_ db: PostgresSession, key: String) throws {
        try db.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 7260219))", ["throttle:" + key])
    }

    public func chargeQuota(_ quota: SendQuota, now: Date) throws {
        try pool.write { db in try Self.charge(db, quota, at: now.milliseconds) }
    }

    public func addAbuseCounts(_ counts: [AbuseCount]) throws {
        guard !counts.isEmpty else { return }
        let counters = counts.map(\.counter)
        let keys = counts.map(\.key)
        let hours = counts.map { Int64($0.hour.timeIntervalSince1970) / 3600 }
        let amounts = counts.map { Int64($0.count) }
        // One statement for the batch. A batch may name one counter, key and hour twice, which one
        // ON CONFLICT DO UPDATE cannot touch twice: they are summed first (as SQLite's row-by-row upserts add up).
        _ = try pool.write { db in
            try db.execute(
                """
                INSERT INTO abuse_counts (counter, key, hour, count)
                SELECT t.counter, t.key, t.hour, SUM(t.count)::bigint
                FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[]) AS t(counter, key, hour, count)
                GROUP BY t.counter, t.key, t.hour
                ORDER BY t.counter, t.key, t.hour
                ON CONFLICT (counter, key, hour) DO UPDATE SET count = abuse_counts.count + excluded.count
                """, [counters, keys, hours, amounts])
        }
    }

    public func abuseCounts(since: Date) throws -> [AbuseCount] {
        try pool.read { db in
            try db.fetchAll(
                """
                SELECT * FROM abuse_counts WHERE hour >= ?
                ORDER BY hour DESC, count DESC, counter COLLATE "C", key COLLATE "C"
                """,
                [Int64(since.timeIntervalSince1970) / 3600]
            ).map(Records.abuseCount)
        }
    }

    public func pruneEvents(before: Date) throws -> Int {
        var deleted = 0
        // Batches of 10,000, each its own short write, so a large backlog never holds its locks for long.
        for (sql, value) in SendLimits.pruneStatements(before: before) {
            let arguments: SQLArguments = [value]
            while true {
                let changes = try pool.write { db in try db.execute(sql, arguments) }
                deleted += changes
                if changes < 10000 { break }
            }
        }
        return deleted
    }
}

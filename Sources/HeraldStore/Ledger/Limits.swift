import Foundation
import HeraldCore

/// The send throttle, the hourly quotas and the abuse counters (statements and decisions: `SendLimits`).
///
/// `recordSuppressed` is each engine's own only for its transaction: SQLite's group commit, PostgreSQL's READ
/// COMMITTED write with the recipient's advisory lock (`SQLiteStore+Limits.swift`, `PostgresStore+Limits.swift`).
extension LedgerEngine {
    public func chargeQuota(_ quota: SendQuota, now: Date) throws {
        try write { db in try Self.charge(db, quota, at: now.milliseconds) }
    }

    public func addAbuseCounts(_ counts: [AbuseCount]) throws {
        guard !counts.isEmpty else { return }
        try write { db in
            switch db.dialect {
            case .sqlite:
                for count in counts {
                    try db.executeCached(
                        """
                        INSERT INTO abuse_counts (counter, key, hour, count) VALUES (?, ?, ?, ?)
                        ON CONFLICT (counter, key, hour) DO UPDATE SET count = count + excluded.count
                        """, [count.counter, count.key, Int64(count.hour.timeIntervalSince1970) / 3600, count.count])
                }
            case .postgres:
                // One statement for the batch. A batch may name one counter, key and hour twice, which one
                // ON CONFLICT DO UPDATE cannot touch twice: they are summed first (as SQLite's row-by-row upserts add up).
                try db.execute(
                    """
                    INSERT INTO abuse_counts (counter, key, hour, count)
                    SELECT t.counter, t.key, t.hour, SUM(t.count)::bigint
                    FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[]) AS t(counter, key, hour, count)
                    GROUP BY t.counter, t.key, t.hour
                    ORDER BY t.counter, t.key, t.hour
                    ON CONFLICT (counter, key, hour) DO UPDATE SET count = abuse_counts.count + excluded.count
                    """,
                    [
                        counts.map(\.counter), counts.map(\.key), counts.map { Int64($0.hour.timeIntervalSince1970) / 3600 },
                        counts.map { Int64($0.count) },
                    ])
            }
        }
    }

    public func abuseCounts(since: Date, limit: Int) throws -> [AbuseCount] {
        try read { db in
            let bytewise = db.dialect.bytewise
            return try db.fetchAll(
                """
                SELECT * FROM abuse_counts WHERE hour >= ?
                ORDER BY hour DESC, count DESC, counter\(bytewise), key\(bytewise) LIMIT \(max(0, limit))
                """,
                [Int64(since.timeIntervalSince1970) / 3600]
            ).map(Records.abuseCount)
        }
    }

    public func pruneEvents(before: Date) throws -> Int {
        var deleted = 0
        // Batches of 10,000, each its own short write, so a large backlog never holds the lock for long.
        for (sql, value) in SendLimits.pruneStatements(before: before) {
            while true {
                let changes = try write { db in try db.execute(sql, [value]) }
                deleted += changes
                if changes < 10000 { break }
            }
        }
        return deleted
    }

    /// A suppressed request's limits and row, in the engine's write (`recordSuppressed`).
    static func recordSuppressed(
        _ db: Session, _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        let at = now.milliseconds
        let key = request.recipientKey
        if let throttle {
            try lockThrottle(db, key: key)
            try checkCooldown(db, throttle, key: key, at: at, SendLimits.suppressedCooldown(request, key: key, at: at))
        }
        if let quota { try charge(db, quota, at: at) }
        try db.executeCached(SendLimits.insertSuppressed, [request.kind.rawValue, key, reason.rawValue, at])
    }

    /// Makes concurrent requests for one recipient take turns, so the second sees the first's row when it checks the
    /// cooldown and the daily cap: on PostgreSQL a transaction-scoped advisory lock on its throttle key (its writes
    /// that take it run READ COMMITTED); SQLite's single writer needs none.
    static func lockThrottle(_ db: Session, key: String) throws {
        guard db.dialect == .postgres else { return }
        try db.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 7260219))", ["throttle:" + key])
    }

    /// Refuses a request inside the cooldown or over the daily cap; `sql` selects `sent` and `latest` for `key`.
    static func checkCooldown(
        _ db: Session, _ throttle: SendThrottle, key: String, at: Int64, _ query: (sql: String, values: [SQLValue])
    ) throws {
        // An aggregate without GROUP BY always returns its one row.
        guard let row = try db.fetchOneCached(query.sql, SQLArguments(query.values)).map({ RecordRow($0) }) else { return }
        try SendRules.checkCooldown(throttle, key: key, at: at, sent: row["sent"], latest: row["latest"])
    }

    /// Counts one email against the project's and the account's hourly quotas, refusing it if either is spent.
    static func charge(_ db: Session, _ quota: SendQuota, at: Int64) throws {
        let hour = at / 3_600_000
        let limits = SendRules.quotas(quota)
        switch db.dialect {
        case .sqlite:
            // Checks every quota before counting: the single writer reads counts no one else is changing.
            for (scope, key, limit) in limits {
                let count = try db.fetchOneCached(SendLimits.quotaCount, [scope, key, hour]).map { $0.value(at: 0) as Int } ?? 0
                try SendRules.checkQuota(scope: scope, key: key, limit: limit, count: count)
            }
            for (scope, key, _) in limits { try db.executeCached(SendLimits.countOne, [scope, key, hour]) }
        case .postgres:
            // Counts first, then checks: the upsert locks the counter row until the transaction ends, so concurrent
            // requests from any node count one after another at any isolation level, and a refusal throws, which
            // rolls its own count back.
            for (scope, key, limit) in limits {
                let counted = try db.value(SendLimits.countOneReturning, [scope, key, hour], as: Int.self) ?? 1
                try SendRules.checkQuota(scope: scope, key: key, limit: limit, count: counted - 1)
            }
        }
    }
}

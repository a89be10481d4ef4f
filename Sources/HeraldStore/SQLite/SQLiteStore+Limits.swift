import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        try writeDurably { db in try Self.recordSuppressed(db, request, reason: reason, throttle: throttle, quota: quota, now: now) }
    }

    /// The same, suspending the task rather than a thread while the group commit runs.
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) async throws {
        try await durable.write { db in try Self.recordSuppressed(db, request, reason: reason, throttle: throttle, quota: quota, now: now) }
    }

    private static func recordSuppressed(
        _ db: Database, _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        let at = now.milliseconds
        let key = request.recipient.throttleKey
        if let throttle {
            try checkCooldown(db, throttle, key: key, at: at, SendLimits.suppressedCooldown(request, key: key, at: at))
        }
        if let quota { try charge(db, quota, at: at) }
        try db.cachedStatement(
            sql: "INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) VALUES (?, ?, ?, ?)"
        ).execute(arguments: [request.kind.rawValue, key, reason.rawValue, at])
    }

    /// Refuses a request inside the cooldown or over the daily cap; `sql` selects `sent` and `latest` for `key`.
    static func checkCooldown(
        _ db: Database, _ throttle: SendThrottle, key: String, at: Int64, _ query: (sql: String, values: [SQLValue])
    ) throws {
        let row = try Row.fetchOne(db.cachedStatement(sql: query.sql), arguments: StatementArguments(query.values))!
        try SendLimits.checkCooldown(throttle, key: key, at: at, sent: row["sent"], latest: row["latest"])
    }

    /// Counts one email against the project's and the account's hourly quotas, refusing it if either is spent.
    static func charge(_ db: Database, _ quota: SendQuota, at: Int64) throws {
        let hour = at / 3_600_000
        let limits = SendLimits.quotas(quota)
        for (scope, key, limit) in limits {
            let count =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count FROM send_counts WHERE scope = ? AND key = ? AND hour = ?"),
                    arguments: [scope, key, hour]) ?? 0
            try SendLimits.checkQuota(scope: scope, key: key, limit: limit, count: count)
        }
        for (scope, key, _) in limits {
            try db.cachedStatement(
                sql: """
                    INSERT INTO send_counts (scope, key, hour, count) VALUES (?, ?, ?, 1)
                    ON CONFLICT (scope, key, hour) DO UPDATE SET count = count + 1
                    """
            ).execute(arguments: [scope, key, hour])
        }
    }

    public func chargeQuota(_ quota: SendQuota, now: Date) throws {
        try pool.write { db in try Self.charge(db, quota, at: now.milliseconds) }
    }

    public func addAbuseCounts(_ counts: [AbuseCount]) throws {
        guard !counts.isEmpty else { return }
        try pool.write { db in
            for count in counts {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO abuse_counts (counter, key, hour, count) VALUES (?, ?, ?, ?)
                        ON CONFLICT (counter, key, hour) DO UPDATE SET count = count + excluded.count
                        """
                ).execute(arguments: [count.counter, count.key, Int64(count.hour.timeIntervalSince1970) / 3600, count.count])
            }
        }
    }

    public func abuseCounts(since: Date) throws -> [AbuseCount] {
        try read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM abuse_counts WHERE hour >= ? ORDER BY hour DESC, count DESC, counter, key",
                arguments: [Int64(since.timeIntervalSince1970) / 3600]
            ).map(Records.abuseCount)
        }
    }

    public func pruneEvents(before: Date) throws -> Int {
        var deleted = 0
        // Batches of 10,000, each its own short write, so a large backlog never holds the lock for long.
        for (sql, value) in SendLimits.pruneStatements(before: before) {
            let arguments: StatementArguments = [value]
            while true {
                let changes = try pool.write { db in
                    try db.execute(sql: sql, arguments: arguments)
                    return db.changesCount
                }
                deleted += changes
                if changes < 10000 { break }
            }
        }
        return deleted
    }
}

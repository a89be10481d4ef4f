import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        let at = now.milliseconds
        let key = request.recipient.throttleKey
        try writeDurably { db in
            if let throttle {
                try Self.checkCooldown(
                    db, throttle, key: key, at: at,
                    sql: """
                        SELECT COUNT(*) AS sent, MAX(requested_at) AS latest FROM suppressed_sends
                        WHERE recipient_key = ? AND action = ? AND requested_at > ?
                        """, arguments: [key, request.kind.rawValue, at - 86_400_000])
            }
            if let quota { try Self.charge(db, quota, at: at) }
            try db.cachedStatement(
                sql: "INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [request.kind.rawValue, key, reason.rawValue, at])
        }
    }

    /// Refuses a request inside the cooldown or over the daily cap; `sql` selects `sent` and `latest` for `key`.
    static func checkCooldown(
        _ db: Database, _ throttle: SendThrottle, key: String, at: Int64, sql: String, arguments: StatementArguments
    ) throws {
        let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)!
        let coolingDown = (row["latest"] as Int64?).map { at - $0 < Int64(throttle.cooldown * 1000) } ?? false
        if coolingDown || (row["sent"] as Int) >= throttle.dailyCap {
            throw LimitRefusal(counter: "recipient", key: EmailAddress.ledgerKey(key), error: HeraldError(.tooManyAttempts, ""))
        }
    }

    /// Counts one email against the project's and the account's hourly quotas, refusing it if either is spent.
    static func charge(_ db: Database, _ quota: SendQuota, at: Int64) throws {
        let hour = at / 3_600_000
        let limits = [("project", "", quota.projectPerHour), ("account", quota.accountKey, quota.accountPerHour)]
        for (scope, key, limit) in limits where limit > 0 {
            let count =
                try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count FROM send_counts WHERE scope = ? AND key = ? AND hour = ?"),
                    arguments: [scope, key, hour]) ?? 0
            if count >= limit {
                let error = HeraldError(scope == "project" ? .quotaExceeded : .tooManyAttempts, "")
                throw LimitRefusal(counter: scope, key: key, error: error)
            }
        }
        for (scope, key, limit) in limits where limit > 0 {
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
            ).map { row in
                AbuseCount(
                    counter: row["counter"], key: row["key"], hour: Date(timeIntervalSince1970: Double(row["hour"] as Int64) * 3600),
                    count: row["count"])
            }
        }
    }

    public func pruneEvents(before: Date) throws -> Int {
        let at = before.milliseconds
        let hour = at / 3_600_000
        let quotaHour = Date().milliseconds / 3_600_000 - 2
        var deleted = 0
        // Batches of 10,000, each its own short write, so a large backlog never holds the lock for long.
        let statements: [(String, StatementArguments)] = [
            ("DELETE FROM link_events WHERE id IN (SELECT id FROM link_events WHERE at < ? LIMIT 10000)", [at]),
            ("DELETE FROM suppressed_sends WHERE id IN (SELECT id FROM suppressed_sends WHERE requested_at < ? LIMIT 10000)", [at]),
            ("DELETE FROM account_events WHERE id IN (SELECT id FROM account_events WHERE at < ? LIMIT 10000)", [at]),
            // Webhook deliveries that are done; queued ones stay however old (nothing is lost by a long outage).
            (
                "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < ? AND state != 'queued' LIMIT 10000)",
                [at]
            ),
            ("DELETE FROM abuse_counts WHERE hour < ?", [hour]),  // one row per counter, key and hour: small
            // Quotas read only the current hour: a couple of hours of counts is all they need, whatever the retention.
            ("DELETE FROM send_counts WHERE hour < ?", [max(hour, quotaHour)]),
        ]
        for (sql, arguments) in statements {
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

import Foundation
import HeraldCore

extension PostgresStore {
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
            try db.execute(
                "INSERT INTO suppressed_sends (action, recipient_key, reason, requested_at) VALUES (?, ?, ?, ?)",
                [request.kind.rawValue, key, reason.rawValue, at])
        }
    }

    /// Refuses a request inside the cooldown or over the daily cap; `sql` selects `sent` and `latest` for `key`.
    static func checkCooldown(
        _ db: PostgresSession, _ throttle: SendThrottle, key: String, at: Int64, sql: String, arguments: SQLArguments
    ) throws {
        // An aggregate without GROUP BY always returns its one row.
        guard let row = try db.fetchOne(sql, arguments) else { return }
        let latest: Int64? = row["latest"]
        let sent: Int = row["sent"]
        let coolingDown = latest.map { at - $0 < Int64(throttle.cooldown * 1000) } ?? false
        if coolingDown || sent >= throttle.dailyCap {
            throw LimitRefusal(counter: "recipient", key: EmailAddress.ledgerKey(key), error: HeraldError(.tooManyAttempts, ""))
        }
    }

    /// Counts one email against the project's and the account's hourly quotas, refusing it if either is spent.
    static func charge(_ db: PostgresSession, _ quota: SendQuota, at: Int64) throws {
        let hour = at / 3_600_000
        let limits = [("project", "", quota.projectPerHour), ("account", quota.accountKey, quota.accountPerHour)]
        for (scope, key, limit) in limits where limit > 0 {
            let count =
                try db.fetchValue(
                    "SELECT count FROM send_counts WHERE scope = ? AND key = ? AND hour = ?", [scope, key, hour], as: Int.self) ?? 0
            if count >= limit {
                let error = HeraldError(scope == "project" ? .quotaExceeded : .tooManyAttempts, "")
                throw LimitRefusal(counter: scope, key: key, error: error)
            }
        }
        for (scope, key, limit) in limits where limit > 0 {
            try db.execute(
                """
                INSERT INTO send_counts (scope, key, hour, count) VALUES (?, ?, ?, 1)
                ON CONFLICT (scope, key, hour) DO UPDATE SET count = send_counts.count + 1
                """, [scope, key, hour])
        }
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
            ).map { (row: SQLRow) -> AbuseCount in
                let hour: Int64 = row["hour"]
                return AbuseCount(
                    counter: row["counter"], key: row["key"], hour: Date(timeIntervalSince1970: Double(hour) * 3600),
                    count: row["count"])
            }
        }
    }

    public func pruneEvents(before: Date) throws -> Int {
        let at = before.milliseconds
        let hour = at / 3_600_000
        let quotaHour = Date().milliseconds / 3_600_000 - 2
        var deleted = 0
        // Batches of 10,000, each its own short write, so a large backlog never holds its locks for long.
        let statements: [(String, SQLArguments)] = [
            ("DELETE FROM link_events WHERE id IN (SELECT id FROM link_events WHERE at < ? LIMIT 10000)", [at]),
            ("DELETE FROM suppressed_sends WHERE id IN (SELECT id FROM suppressed_sends WHERE requested_at < ? LIMIT 10000)", [at]),
            ("DELETE FROM account_events WHERE id IN (SELECT id FROM account_events WHERE at < ? LIMIT 10000)", [at]),
            // Webhook deliveries that are done; queued ones stay however old (nothing is lost by a long outage).
            (
                "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE created_at < ? AND state <> 'queued' LIMIT 10000)",
                [at]
            ),
            ("DELETE FROM abuse_counts WHERE hour < ?", [hour]),  // one row per counter, key and hour: small
            // Quotas read only the current hour: a couple of hours of counts is all they need, whatever the retention.
            ("DELETE FROM send_counts WHERE hour < ?", [max(hour, quotaHour)]),
        ]
        for (sql, arguments) in statements {
            while true {
                let changes = try pool.write { db in try db.execute(sql, arguments) }
                deleted += changes
                if changes < 10000 { break }
            }
        }
        return deleted
    }
}

import Foundation
import HeraldCore

extension PostgresStore: SharedRateLimits {
    /// One upsert on `rate_slots`: the key's next free slot moves `count × interval` past the later of itself and
    /// now; the row lock orders concurrent reservations from every process. "Now" is the ledger's clock, so a host
    /// whose clock is off neither takes every slot nor waits for ever; the start comes back as a distance from `now`.
    public func reserveSendSlots(_ count: Int, interval: TimeInterval, key: String, now: Date) throws -> Date {
        let span = Int64((Double(max(1, count)) * interval * 1000).rounded(.up))
        let clock = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
        let ahead = try pool.write(.readCommitted) { db in
            try db.fetchValue(
                """
                INSERT INTO rate_slots (key, next_at) VALUES (:key, \(clock) + :span)
                ON CONFLICT (key) DO UPDATE SET next_at = GREATEST(rate_slots.next_at, \(clock)) + :span
                RETURNING next_at - :span - \(clock) AS ahead
                """, ["key": key, "span": span], as: Int64.self)
        }
        return now.addingTimeInterval(Double(max(0, ahead ?? 0)) / 1000)
    }
}

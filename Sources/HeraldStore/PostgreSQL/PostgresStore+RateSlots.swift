import Foundation
import HeraldCore

extension PostgresStore: SharedRateLimits {
    /// One upsert on `rate_slots`: the key's next free slot moves `count × interval` past the later of itself and
    /// now; the row lock orders concurrent reservations from every process.
    public func reserveSendSlots(_ count: Int, interval: TimeInterval, key: String, now: Date) throws -> Date {
        let span = Int64((Double(max(1, count)) * interval * 1000).rounded(.up))
        let next = try pool.write(.readCommitted) { db in
            try db.fetchValue(
                """
                INSERT INTO rate_slots (key, next_at) VALUES (:key, :now + :span)
                ON CONFLICT (key) DO UPDATE SET next_at = GREATEST(rate_slots.next_at, :now) + :span
                RETURNING next_at
                """, ["key": key, "now": now.milliseconds, "span": span], as: Int64.self)
        }
        return Date(milliseconds: (next ?? now.milliseconds + span) - span)
    }
}

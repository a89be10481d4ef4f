import Foundation
import HeraldCore

/// The PostgreSQL machinery of retries and cancels (`Ledger/Requeue.swift`).
extension PostgresStore {
    /// The rows of one batch in one statement each for the rows, their codes and their events (`= ANY`, `unnest`);
    /// a retry notifies the listening workers.
    static func requeue(_ ids: [Int64], _ db: PostgresSession, _ change: RequeueChange, at: Int64) throws -> [Int64] {
        if change.event == "retried" { try Self.announceQueued(db) }
        let changed = try db.fetchColumn(
            """
            UPDATE outbox SET \(change.assignments)
            WHERE id = ANY(?3::bigint[]) AND state IN (\(change.states))
            RETURNING id
            """, [at, change.reply, ids], as: Int64.self
        ).sorted()
        guard !changed.isEmpty else { return [] }
        try db.execute(
            """
            UPDATE action_codes SET superseded_at = COALESCE(superseded_at, ?1::bigint), expires_at = LEAST(expires_at, ?1::bigint)
            WHERE outbox_id = ANY(?2::bigint[]) AND redeemed_at IS NULL
            """, [at, changed])
        try db.execute(
            """
            INSERT INTO outbox_events (outbox_id, kind, actor, at)
            SELECT e.id, ?2::text, ?3::text, ?4::bigint FROM unnest(?1::bigint[]) WITH ORDINALITY AS e(id, n) ORDER BY e.n
            """, [changed, change.event, change.actor, at])
        return changed
    }
}

import Foundation
import GRDB
import HeraldCore

/// The SQLite machinery of retries and cancels (`Ledger/Requeue.swift`).
extension SQLiteStore {
    /// Row by row, through cached statements: SQLite's single writer changes one row as cheaply as a set.
    static func requeue(_ ids: [Int64], _ db: Database, _ change: RequeueChange, at: Int64) throws -> [Int64] {
        let update = try db.cachedStatement(
            sql: """
                UPDATE outbox SET \(change.assignments)
                WHERE id = ?3 AND state IN (\(change.states))
                """)
        let voidCodes = try db.cachedStatement(
            sql: """
                UPDATE action_codes SET superseded_at = COALESCE(superseded_at, ?1), expires_at = MIN(expires_at, ?1)
                WHERE outbox_id = ?2 AND redeemed_at IS NULL
                """)
        let record = try db.cachedStatement(sql: "INSERT INTO outbox_events (outbox_id, kind, actor, at) VALUES (?, ?, ?, ?)")
        let reply = change.reply
        var changed: [Int64] = []
        for id in ids {
            try update.execute(arguments: [at, reply, id])
            guard db.changesCount > 0 else { continue }
            try voidCodes.execute(arguments: [at, id])
            try record.execute(arguments: [id, change.event, change.actor, at])
            changed.append(id)
        }
        return changed
    }
}

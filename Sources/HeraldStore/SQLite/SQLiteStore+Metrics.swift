import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// One pass over `outbox`, grouped; at most states × actions × (campaigns + 1) rows come back.
    public func outboxCounts() throws -> [OutboxCount] {
        try pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT state, action, campaign_id, COUNT(*) AS n FROM outbox GROUP BY state, action, campaign_id
                    """)
            return rows.compactMap { row in
                guard let state = OutboxState(rawValue: row["state"]), let kind = ActionKind(rawValue: row["action"]) else { return nil }
                return OutboxCount(state: state, kind: kind, campaignID: row["campaign_id"], count: row["n"])
            }
        }
    }
}

import Foundation
import HeraldCore

extension PostgresStore {
    /// One pass over `outbox`, grouped; at most states × actions × (campaigns + 1) rows come back, in the
    /// order SQLite's grouping gave them (by state, action, then campaign with no campaign first).
    public func outboxCounts() throws -> [OutboxCount] {
        try pool.read { db in
            let rows = try db.fetchAll(
                """
                SELECT state, action, campaign_id, COUNT(*) AS n FROM outbox GROUP BY state, action, campaign_id
                ORDER BY state COLLATE "C", action COLLATE "C", campaign_id NULLS FIRST
                """)
            return rows.compactMap { row in
                guard let state = OutboxState(rawValue: row["state"]), let kind = ActionKind(rawValue: row["action"]) else { return nil }
                return OutboxCount(state: state, kind: kind, campaignID: row["campaign_id"], count: row["n"])
            }
        }
    }
}

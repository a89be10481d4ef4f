import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Everything `herald campaign report` shows, in one read transaction.
    public func report(campaign id: Int64, now: Date) throws -> CampaignReport {
        let campaign = try self.campaign(id: id)
        let counts = try self.counts(campaign: id)
        let feedback = try feedbackCounts(campaign: id)
        return try pool.read { db in
            var replyCodes: [String: Int] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT COALESCE(CAST(last_reply_code AS TEXT), 'none') AS code, COUNT(*) AS n FROM outbox
                    WHERE campaign_id = ? AND attempts > 0 GROUP BY 1
                    """, arguments: [id])
            {
                replyCodes[row["code"]] = row["n"]
            }
            let clicked =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(DISTINCT c.outbox_id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                        JOIN outbox o ON o.id = c.outbox_id WHERE o.campaign_id = ? AND e.kind = 'click'
                        """, arguments: [id]) ?? 0
            let durations = try Int64.fetchAll(
                db,
                sql: """
                    SELECT MIN(c.redeemed_at) - o.sent_at FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                    WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id ORDER BY 1
                    """, arguments: [id])
            let sentTimes = try Int64.fetchAll(
                db, sql: "SELECT sent_at FROM outbox WHERE campaign_id = ? AND sent_at IS NOT NULL ORDER BY sent_at", arguments: [id])
            let redeemTimes = try Int64.fetchAll(
                db,
                sql: """
                    SELECT MIN(c.redeemed_at) FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                    WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL GROUP BY o.id ORDER BY 1
                    """, arguments: [id])
            return CampaignReporting.report(
                campaign, counts: counts, replyCodes: replyCodes, clicked: clicked, durations: durations, sentTimes: sentTimes,
                redeemTimes: redeemTimes, feedback: feedback)
        }
    }
}

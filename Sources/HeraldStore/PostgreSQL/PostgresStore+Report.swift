import Foundation
import HeraldCore

extension PostgresStore {
    /// Everything `herald campaign report` shows, in one read transaction.
    public func report(campaign id: Int64, now: Date) throws -> CampaignReport {
        let campaign = try self.campaign(id: id)
        let counts = try self.counts(campaign: id)
        let feedback = try feedbackCounts(campaign: id)
        return try pool.read { db in
            var replyCodes: [String: Int] = [:]
            for row in try db.fetchAll(
                """
                SELECT COALESCE(CAST(last_reply_code AS TEXT), 'none') AS code, COUNT(*) AS n FROM outbox
                WHERE campaign_id = ? AND attempts > 0 GROUP BY 1
                """, [id])
            {
                replyCodes[row["code"]] = row["n"]
            }
            let clicked =
                try db.fetchValue(
                    """
                    SELECT COUNT(DISTINCT c.outbox_id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                    JOIN outbox o ON o.id = c.outbox_id WHERE o.campaign_id = ? AND e.kind = 'click'
                    """, [id], as: Int.self) ?? 0
            let durations = try db.fetchColumn(
                """
                SELECT MIN(c.redeemed_at) - o.sent_at FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id, o.sent_at ORDER BY 1
                """, [id], as: Int64.self)
            let sentTimes = try db.fetchColumn(
                "SELECT sent_at FROM outbox WHERE campaign_id = ? AND sent_at IS NOT NULL ORDER BY sent_at", [id], as: Int64.self)
            let redeemTimes = try db.fetchColumn(
                """
                SELECT MIN(c.redeemed_at) FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL GROUP BY o.id ORDER BY 1
                """, [id], as: Int64.self)
            return CampaignReporting.report(
                campaign, counts: counts, replyCodes: replyCodes, clicked: clicked, durations: durations, sentTimes: sentTimes,
                redeemTimes: redeemTimes, feedback: feedback)
        }
    }
}

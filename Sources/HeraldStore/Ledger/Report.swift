import Foundation
import HeraldCore

extension LedgerEngine {
    /// Everything `herald campaign report` shows, in one read transaction.
    public func report(campaign id: Int64, now: Date) throws -> CampaignReport {
        let campaign = try self.campaign(id: id)
        let counts = try self.counts(campaign: id)
        let feedback = try feedbackCounts(campaign: id)
        return try read { db in
            var replyCodes: [String: Int] = [:]
            for row in try db.rows(
                """
                SELECT COALESCE(CAST(last_reply_code AS TEXT), 'none') AS code, COUNT(*) AS n FROM outbox
                WHERE campaign_id = ? AND attempts > 0 GROUP BY 1
                """, [id])
            {
                replyCodes[row["code"]] = row["n"]
            }
            let clicked =
                try db.value(
                    """
                    SELECT COUNT(DISTINCT c.outbox_id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                    JOIN outbox o ON o.id = c.outbox_id WHERE o.campaign_id = ? AND e.kind = 'click'
                    """, [id], as: Int.self) ?? 0
            let durations = try db.column(
                """
                SELECT MIN(c.redeemed_at) - o.sent_at FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id, o.sent_at ORDER BY 1
                """, [id], as: Int64.self)
            let sentTimes = try db.column(
                "SELECT sent_at FROM outbox WHERE campaign_id = ? AND sent_at IS NOT NULL ORDER BY sent_at", [id], as: Int64.self)
            let redeemTimes = try db.column(
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

/// Building a `CampaignReport` from what each store's queries read.
enum CampaignReporting {
    /// The report of `campaign`: `durations` (send to first redemption), `sentTimes` and `redeemTimes` sorted,
    /// in Unix milliseconds.
    static func report(
        _ campaign: Campaign, counts: [OutboxState: Int], replyCodes: [String: Int], clicked: Int, durations: [Int64],
        sentTimes: [Int64], redeemTimes: [Int64], feedback: [FeedbackCount]
    ) -> CampaignReport {
        let (funnel, bucket) = Self.funnel(sent: sentTimes, redeemed: redeemTimes)
        let progress = CampaignProgress(campaign, counts: counts)
        return CampaignReport(
            campaign: campaign, status: progress.status, counts: counts, replyCodes: replyCodes, sent: progress.sent, clicked: clicked,
            redeemed: redeemTimes.count, timeToRedeem: Self.percentiles(durations), funnel: funnel, bucketSeconds: bucket,
            feedback: feedback)
    }

    /// Nearest-rank percentiles of sorted millisecond durations, in seconds.
    static func percentiles(_ sorted: [Int64]) -> CampaignReport.Percentiles? {
        guard !sorted.isEmpty else { return nil }
        func rank(_ p: Double) -> Double {
            Double(sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]) / 1000
        }
        return .init(p50: rank(0.5), p90: rank(0.9), p99: rank(0.99))
    }

    /// Sent and redeemed counts over time in at most ~48 buckets of a round size.
    static func funnel(sent: [Int64], redeemed: [Int64]) -> ([CampaignReport.Bucket], Int) {
        let all = sent + redeemed
        guard let first = all.min(), let last = all.max() else { return ([], 60) }
        let span = Double(last - first) / 1000
        let size = [1, 10, 60, 300, 900, 3600, 21600, 86400].first { span / Double($0) <= 48 } ?? 86400
        let width = Int64(size) * 1000
        let origin = first - first % width
        let count = Int((last - origin) / width) + 1
        var sentCounts = [Int](repeating: 0, count: count)
        var redeemedCounts = [Int](repeating: 0, count: count)
        for time in sent { sentCounts[Int((time - origin) / width)] += 1 }
        for time in redeemed { redeemedCounts[Int((time - origin) / width)] += 1 }
        let buckets = (0..<count).map {
            CampaignReport.Bucket(start: Date(milliseconds: origin + Int64($0) * width), sent: sentCounts[$0], redeemed: redeemedCounts[$0])
        }
        return (buckets, size)
    }
}

import Foundation
import HeraldCore

/// Building a `CampaignReport` from what each store's queries read.
enum CampaignReporting {
    /// The report of `campaign`: `durations` (send to first redemption), `sentTimes` and `redeemTimes` sorted,
    /// in Unix milliseconds.
    static func report(
        _ campaign: Campaign, counts: [OutboxState: Int], replyCodes: [String: Int], clicked: Int, durations: [Int64],
        sentTimes: [Int64], redeemTimes: [Int64], feedback: [FeedbackCount]
    ) -> CampaignReport {
        let (funnel, bucket) = Self.funnel(sent: sentTimes, redeemed: redeemTimes)
        return CampaignReport(
            campaign: campaign, status: campaign.status(counts: counts), counts: counts, replyCodes: replyCodes,
            sent: [OutboxState.sent, .bounced, .complained].reduce(0) { $0 + (counts[$1] ?? 0) }, clicked: clicked,
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

import Foundation
import HeraldCore

extension LedgerEngine {
    /// Everything `herald campaign report` shows, read from the campaign's tallies and rollups (a few rows per
    /// second it sent or was redeemed in, whatever its size).
    public func report(campaign id: Int64, now: Date) throws -> CampaignReport {
        let campaign = try self.campaign(id: id)
        let counts = try self.counts(campaign: id)
        let feedback = try feedbackCounts(campaign: id)
        return try read { db in
            func histogram(_ family: LedgerRollups.Family) throws -> [CampaignReporting.Bucket] {
                try Self.rollup(db, family, campaign: id).map { ($0.bucket, $0.count) }.sorted { $0.0 < $1.0 }
            }
            var replyCodes: [String: Int] = [:]
            for row in try Self.rollup(db, .replies, campaign: id) { replyCodes[row.label, default: 0] += row.count }
            let clicked = try Self.rollup(db, .clicked, campaign: id).reduce(0) { $0 + $1.count }
            return CampaignReporting.report(
                campaign, counts: counts, replyCodes: replyCodes, clicked: clicked, delays: try histogram(.delays),
                sentSeconds: try histogram(.sent), redeemedSeconds: try histogram(.redeemed), feedback: feedback)
        }
    }
}

/// Building a `CampaignReport` from the rollups' histograms.
enum CampaignReporting {
    /// A histogram's bucket (a second, or a delay in milliseconds) and its count.
    typealias Bucket = (value: Int64, count: Int)

    /// The report of `campaign`: `delays` (send to first redemption, in milliseconds to three significant digits),
    /// `sentSeconds` and `redeemedSeconds` (Unix seconds) sorted.
    static func report(
        _ campaign: Campaign, counts: [OutboxState: Int], replyCodes: [String: Int], clicked: Int, delays: [Bucket],
        sentSeconds: [Bucket], redeemedSeconds: [Bucket], feedback: [FeedbackCount]
    ) -> CampaignReport {
        let (funnel, bucket) = Self.funnel(sent: sentSeconds, redeemed: redeemedSeconds)
        let progress = CampaignProgress(campaign, counts: counts)
        return CampaignReport(
            campaign: campaign, status: progress.status, counts: counts, replyCodes: replyCodes, sent: progress.sent, clicked: clicked,
            redeemed: redeemedSeconds.reduce(0) { $0 + $1.count }, timeToRedeem: Self.percentiles(delays), funnel: funnel,
            bucketSeconds: bucket, feedback: feedback)
    }

    /// Nearest-rank percentiles of a sorted histogram of millisecond durations, in seconds.
    static func percentiles(_ sorted: [Bucket]) -> CampaignReport.Percentiles? {
        let total = sorted.reduce(0) { $0 + $1.count }
        guard total > 0 else { return nil }
        func rank(_ p: Double) -> Double {
            let wanted = min(total, max(1, Int((p * Double(total)).rounded(.up))))
            var seen = 0
            for bucket in sorted {
                seen += bucket.count
                if seen >= wanted { return Double(bucket.value) / 1000 }
            }
            return Double(sorted[sorted.count - 1].value) / 1000
        }
        return .init(p50: rank(0.5), p90: rank(0.9), p99: rank(0.99))
    }

    /// Sent and redeemed counts over time in at most ~48 buckets of a round size, from per-second histograms.
    static func funnel(sent: [Bucket], redeemed: [Bucket]) -> ([CampaignReport.Bucket], Int) {
        let seconds = (sent + redeemed).map(\.value)
        guard let first = seconds.min(), let last = seconds.max() else { return ([], 60) }
        let span = Double(last - first)
        let size = [1, 10, 60, 300, 900, 3600, 21600, 86400].first { span / Double($0) <= 48 } ?? 86400
        let width = Int64(size)
        let origin = first - first % width
        let count = Int((last - origin) / width) + 1
        var sentCounts = [Int](repeating: 0, count: count)
        var redeemedCounts = [Int](repeating: 0, count: count)
        for bucket in sent { sentCounts[Int((bucket.value - origin) / width)] += bucket.count }
        for bucket in redeemed { redeemedCounts[Int((bucket.value - origin) / width)] += bucket.count }
        let buckets = (0..<count).map {
            CampaignReport.Bucket(
                start: Date(milliseconds: (origin + Int64($0) * width) * 1000), sent: sentCounts[$0], redeemed: redeemedCounts[$0])
        }
        return (buckets, size)
    }
}

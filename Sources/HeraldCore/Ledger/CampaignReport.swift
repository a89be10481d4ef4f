import Foundation

/// A campaign's numbers, all computed from the ledger.
public struct CampaignReport: Sendable {
    public struct Percentiles: Sendable, Hashable {
        public let p50: Double
        public let p90: Double
        public let p99: Double

        public init(p50: Double, p90: Double, p99: Double) {
            self.p50 = p50
            self.p90 = p90
            self.p99 = p99
        }
    }

    public struct Bucket: Sendable, Hashable {
        public let start: Date
        public let sent: Int
        public let redeemed: Int

        public init(start: Date, sent: Int, redeemed: Int) {
            self.start = start
            self.sent = sent
            self.redeemed = redeemed
        }
    }

    public let campaign: Campaign
    /// What the campaign is doing, as `CampaignProgress` states it for every view of it.
    public let status: CampaignProgress.Status
    public let counts: [OutboxState: Int]
    /// Last SMTP reply code per row ("none" for rows never answered).
    public let replyCodes: [String: Int]
    public let sent: Int
    public let clicked: Int
    public let redeemed: Int
    public let timeToRedeem: Percentiles?
    public let funnel: [Bucket]
    public let bucketSeconds: Int
    /// Bounces and complaints of the campaign's mail, by kind and status class: each message once among its bounces
    /// (by its hard bounce if it had one, else its latest) and once among its complaints, so the counts add up to
    /// messages. (The row itself keeps the first report that moved it: `herald messages` shows that one.)
    public let feedback: [FeedbackCount]

    public init(
        campaign: Campaign, status: CampaignProgress.Status, counts: [OutboxState: Int], replyCodes: [String: Int], sent: Int, clicked: Int,
        redeemed: Int, timeToRedeem: Percentiles?, funnel: [Bucket], bucketSeconds: Int, feedback: [FeedbackCount] = []
    ) {
        self.feedback = feedback
        self.campaign = campaign
        self.status = status
        self.counts = counts
        self.replyCodes = replyCodes
        self.sent = sent
        self.clicked = clicked
        self.redeemed = redeemed
        self.timeToRedeem = timeToRedeem
        self.funnel = funnel
        self.bucketSeconds = bucketSeconds
    }

    public var total: Int { counts.values.reduce(0, +) }
    public var redemptionRate: Double { sent == 0 ? 0 : Double(redeemed) / Double(sent) }
    /// Sent mail that bounced (hard or soft), and that drew a complaint.
    public var bounced: Int { feedback.filter { $0.kind != .complaint }.reduce(0) { $0 + $1.count } }
    public var complained: Int { feedback.filter { $0.kind == .complaint }.reduce(0) { $0 + $1.count } }
    public var bounceRate: Double { sent == 0 ? 0 : Double(bounced) / Double(sent) }
    public var complaintRate: Double { sent == 0 ? 0 : Double(complained) / Double(sent) }
}

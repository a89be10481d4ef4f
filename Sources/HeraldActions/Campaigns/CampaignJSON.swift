import HeraldCore

/// A campaign in `herald campaigns list --format json` and `GET /admin/campaigns`: its progress (`CampaignProgress`,
/// as the console shows it); `rate` (the configured one) is `null` when unlimited; `liveRate` is messages a second
/// over the last minute and `etaSeconds` when the rest would be sent at that rate (`null` while nothing sends).
public struct CampaignJSON: Encodable, Sendable {
    enum CodingKeys: String, CodingKey {
        case id, name, action, state, startAt, imported, sent, failed, pending, rejected, rate, counts, liveRate, etaSeconds
    }

    public let progress: CampaignProgress
    /// Its live rate and ETA, where the caller read them (`CampaignsService.paces`).
    public let pace: CampaignPace?

    public init(progress: CampaignProgress, pace: CampaignPace? = nil) {
        self.progress = progress
        self.pace = pace
    }

    public func encode(to encoder: any Encoder) throws {
        let campaign = progress.campaign
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(campaign.id, forKey: .id)
        try container.encode(campaign.name, forKey: .name)
        try container.encode(campaign.kind.rawValue, forKey: .action)
        try container.encode(progress.status.rawValue, forKey: .state)
        try container.encode(campaign.startAt.iso8601, forKey: .startAt)
        try container.encode(progress.total, forKey: .imported)
        try container.encode(progress.sent, forKey: .sent)
        try container.encode(progress.failed, forKey: .failed)
        try container.encode(progress.pending, forKey: .pending)
        try container.encode(campaign.rejected, forKey: .rejected)
        try container.encode(campaign.rate, forKey: .rate)
        let byState = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0.rawValue, progress.counts[$0] ?? 0) })
        try container.encode(byState, forKey: .counts)
        if let pace {
            try container.encode((pace.rate * 1000).rounded() / 1000, forKey: .liveRate)
            try container.encode(pace.eta.map { Int($0.rounded(.up)) }, forKey: .etaSeconds)
        }
    }
}

import HeraldCore

/// A campaign in `herald campaigns list --format json`: its progress (`CampaignProgress`, as the console shows it);
/// `rate` is `null` when unlimited.
struct CampaignJSON: Encodable {
    enum CodingKeys: String, CodingKey {
        case id, name, action, state, startAt, imported, sent, failed, pending, rejected, rate, counts
    }

    let progress: CampaignProgress

    func encode(to encoder: any Encoder) throws {
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
    }
}

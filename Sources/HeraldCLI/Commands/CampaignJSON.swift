import HeraldCore

/// A campaign in `herald campaign list --json`: its progress from the counts alone; `rate` is `null` when unlimited.
struct CampaignJSON: Encodable {
    enum CodingKeys: String, CodingKey {
        case id, name, action, state, imported, rejected, rate, counts
    }

    let campaign: Campaign
    let counts: [OutboxState: Int]

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(campaign.id, forKey: .id)
        try container.encode(campaign.name, forKey: .name)
        try container.encode(campaign.kind.rawValue, forKey: .action)
        try container.encode(campaign.status(counts: counts), forKey: .state)
        try container.encode(counts.values.reduce(0, +), forKey: .imported)
        try container.encode(campaign.rejected, forKey: .rejected)
        try container.encode(campaign.rate, forKey: .rate)
        let byState = Dictionary(uniqueKeysWithValues: OutboxState.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
        try container.encode(byState, forKey: .counts)
    }
}

/// How many outbox rows are in one state, for one action and campaign (nil: single sends): what `/metrics`
/// shows as queue depth and campaign progress.
public struct OutboxCount: Sendable, Hashable {
    public let state: OutboxState
    public let kind: ActionKind
    public let campaignID: Int64?
    public let count: Int

    public init(state: OutboxState, kind: ActionKind, campaignID: Int64?, count: Int) {
        self.state = state
        self.kind = kind
        self.campaignID = campaignID
        self.count = count
    }
}

import HeraldCore

extension Actions {
    /// The outbox counted by state, action and campaign, read off the cooperative pool: `/metrics`'s queue depth
    /// and campaign progress, computed when scraped.
    public func outboxCounts() async throws -> [OutboxCount] {
        let store = store
        return try await offload { try store.outboxCounts() }
    }
}

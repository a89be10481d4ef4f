import HeraldActions
import ServiceLifecycle

/// Writes the refused requests `Actions` counts in memory to the ledger every second, and once more at
/// shutdown, so `herald throttles` shows a burst even when no later refusal comes to carry it.
public struct AbuseCountsService: Service {
    let actions: Actions

    public init(actions: Actions) {
        self.actions = actions
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            let actions = actions
            _ = try? await offload { actions.flushAbuseCounts() }
        }
    }
}

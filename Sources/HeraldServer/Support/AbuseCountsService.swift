import HeraldActions
import ServiceLifecycle

/// Writes the refused requests the services count in memory to the ledger every second, and once more at
/// shutdown, so `herald throttles` shows a burst even when no later refusal comes to carry it.
public struct AbuseCountsService: Service {
    let refusals: RefusalCounter

    public init(refusals: RefusalCounter) {
        self.refusals = refusals
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            _ = try? await offload { refusals.flushAbuseCounts() }
        }
    }
}

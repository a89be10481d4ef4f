import HeraldStore

/// Runs blocking work (SQLite, password hashing, key generation) on a thread of `blockingThreads`,
/// never on the cooperative pool.
public func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await blockingThreads.runIfActive(body)
}

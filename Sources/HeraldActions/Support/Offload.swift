import NIOPosix

/// Runs blocking work (SQLite, password hashing, key generation) on a thread of `blockingThreads`,
/// never on the cooperative pool.
///
/// Not Dispatch's global queue: on Linux it starts few threads for work that blocks, so concurrent
/// requests waited there for a thread instead of sharing a group commit (`writeDurably`).
public func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await blockingThreads.runIfActive(body)
}

/// The threads blocking work runs on: enough for the requests in flight to reach the ledger together.
let blockingThreads: NIOThreadPool = {
    let pool = NIOThreadPool(numberOfThreads: 32)
    pool.start()
    return pool
}()

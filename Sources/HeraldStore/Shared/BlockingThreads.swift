import NIOPosix

/// The threads blocking work runs on (SQLite, PostgreSQL's blocking calls, password hashing, key generation): never
/// the cooperative pool. `offload` (HeraldActions) runs work here, as do the stores' `async` entry points that have no
/// suspending implementation of their own.
///
/// Not Dispatch's global queue: on Linux it starts few threads for work that blocks, so concurrent requests waited
/// there for a thread instead of sharing a group commit. 32: enough for the requests in flight to reach the ledger
/// together.
public let blockingThreads: NIOThreadPool = {
    let pool = NIOThreadPool(numberOfThreads: 32)
    pool.start()
    return pool
}()

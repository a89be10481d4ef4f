import Foundation

/// A worker process as the ledger knows it: where it runs and when it last said it was alive.
public struct WorkerProcess: Sendable, Hashable {
    /// Random per process; claims name it as `<id>/<connection>`.
    public let id: String
    /// The hostname and boot id: where `pid` can be checked.
    public let host: String
    public let pid: Int32
    public let startedAt: Date
    public let heartbeatAt: Date

    public init(id: String, host: String, pid: Int32, startedAt: Date, heartbeatAt: Date) {
        self.id = id
        self.host = host
        self.pid = pid
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
    }
}

/// Workers register and beat; a worker found dead has its rows returned to the queue at once.
public protocol WorkerRegistry: Sendable {
    /// Records a starting worker.
    func register(_ worker: WorkerProcess) throws

    /// Marks the worker alive at `now` (again, if it had been given up for dead).
    func heartbeat(worker id: String, now: Date) throws

    /// Marks a cleanly stopped worker; its rows were already recorded or handed back.
    func deregister(worker id: String, now: Date) throws

    /// Workers that have not stopped.
    func liveWorkers() throws -> [WorkerProcess]

    /// Marks `id` dead and returns its claimed rows to the queue: those that may have been started (at most
    /// `worker.unrecordedPerConnection` per connection) get an `interrupted` attempt, the rest go back uncharged.
    /// - Returns: how many rows were interrupted and how many given back.
    @discardableResult
    func returnOrphans(ofWorker id: String, reason: String, maxAttempts: Int, now: Date) throws -> (interrupted: Int, returned: Int)

    /// Compacts the store's log while the worker is idle (SQLite: a truncating WAL checkpoint).
    func checkpoint() throws

    /// Keeps the store's log short beside a working worker, on a thread of its own, until the returned function is
    /// called (SQLite: passive WAL checkpoints on their own connection; nothing elsewhere). `besideRequests`: the
    /// process also answers API requests, whose durable commits share the disk with the checkpoints.
    func checkpointInBackground(besideRequests: Bool) -> @Sendable () -> Void

    /// Deletes link events, suppressed requests and hourly counters older than `before` (`ledger.eventRetention`),
    /// in short batches; returns how many rows went.
    func pruneEvents(before: Date) throws -> Int
}

import Foundation
import HeraldCore

/// A worker process as the ledger knows it: where it runs and when it last said it was alive.
public struct WorkerProcess: Sendable, Hashable {
    /// Random per process; claims name it as `<id>/<connection>`.
    public let id: String
    /// The hostname and boot id: where `pid` can be checked.
    public let host: String
    public let pid: Int32
    public let startedAt: Date
    public let heartbeatAt: Date
    /// How long ago the last heartbeat was, by the ledger's clock (PostgreSQL's, not this host's): what other hosts'
    /// workers are judged by.
    public let heartbeatAge: TimeInterval
    /// Why the SMTP relay fails this worker's connections, and since when, as of its last heartbeat; nil while it does not.
    public let relayProblem: RelayProblem?

    public init(
        id: String, host: String, pid: Int32, startedAt: Date, heartbeatAt: Date, heartbeatAge: TimeInterval = 0,
        relayProblem: RelayProblem? = nil
    ) {
        self.id = id
        self.host = host
        self.pid = pid
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.heartbeatAge = heartbeatAge
        self.relayProblem = relayProblem
    }
}

/// Why the SMTP relay fails the worker's connections, and since when: what `/health`, `herald worker --until-empty`
/// and the logs say while the worker keeps retrying.
public struct RelayProblem: Sendable, Hashable, CustomStringConvertible {
    /// The connection's failure, as the worker records it (`authentication failed: 535 …`, `TLS failed: …`).
    public let reason: String
    /// The first failure of this outage.
    public let since: Date

    public init(reason: String, since: Date) {
        self.reason = reason
        self.since = since
    }

    /// The relay refuses the way Herald is configured to talk to it (TLS, authentication, or a server that requires
    /// authentication): retrying alone will not fix it, the configuration must change.
    public var isConfiguration: Bool {
        reason.hasPrefix("authentication failed") || reason.hasPrefix("TLS failed")
            || [530, 534, 538].contains { reason.contains("refused: \($0)") }
    }

    public var description: String {
        guard isConfiguration else { return reason }
        return "\(reason) (the relay refuses Herald's configuration: check smtp.url, smtp.requireStartTLS, smtp.username, "
            + "smtp.password and smtp.caFile; still retrying)"
    }

    /// `description` and when the outage began: `TLS failed: … (since 2026-11-28T12:03:00Z)`.
    public var sinceDescription: String {
        "\(description) (since \(since.formatted(.iso8601)))"
    }
}

/// Workers register and beat; a worker found dead has its rows returned to the queue at once.
public protocol WorkerRegistry: Sendable {
    /// Records a starting worker.
    func register(_ worker: WorkerProcess) throws

    /// Marks the worker alive (by the ledger's clock; `now` on SQLite). Returns false, changing nothing, when the
    /// worker was given up for dead meanwhile (`returnOrphans`): the rows it holds are no longer its own.
    func heartbeat(worker id: String, now: Date) throws -> Bool

    /// Records why the SMTP relay fails the worker's connections and since when (nil: it no longer does).
    func reportRelay(worker id: String, problem: RelayProblem?) throws

    /// Marks a worker that was given up for dead alive again, once it has let go of the rows it held.
    func rejoin(worker id: String, now: Date) throws

    /// Marks a cleanly stopped worker; its rows were already recorded or handed back.
    func deregister(worker id: String, now: Date) throws

    /// Workers that have not stopped, with their heartbeats' ages by the ledger's clock.
    func liveWorkers(now: Date) throws -> [WorkerProcess]

    /// Marks `id` dead and returns its claimed rows to the queue: those that may have been started (at most
    /// `worker.unrecordedPerConnection` per connection) get an `interrupted` attempt, the rest go back uncharged.
    /// - Returns: how many rows were interrupted and how many given back.
    @discardableResult
    func returnOrphans(ofWorker id: String, reason: String, maxAttempts: Int, now: Date) throws -> (interrupted: Int, returned: Int)

    /// Compacts the store's log while the worker is idle (SQLite: a truncating WAL checkpoint).
    func checkpoint() throws

    /// Gives up to `pages` of the ledger's free pages beyond a reserve of a tenth of the file back to the file system,
    /// in one short step: SQLite ledgers made with incremental auto-vacuum (as Herald makes new ones); elsewhere
    /// nothing. Returns how many pages it gave back.
    @discardableResult
    func reclaimSpace(pages: Int) throws -> Int

    /// Folds the outbox tallies' deltas into the tallies (PostgreSQL, whose triggers append deltas; SQLite's update
    /// the tallies in place, so nothing is left to fold); returns how many tallies changed.
    @discardableResult
    func foldTallies() throws -> Int

    /// Keeps the store's log short beside a working worker, on a thread of its own, until the returned function is
    /// called (SQLite: passive WAL checkpoints on their own connection; nothing elsewhere). `besideRequests`: the
    /// process also answers API requests, whose durable commits share the disk with the checkpoints.
    func checkpointInBackground(besideRequests: Bool) -> @Sendable () -> Void

    /// Deletes link events, suppressed requests and hourly counters older than `before` (`ledger.eventRetention`),
    /// in short batches; returns how many rows went.
    func pruneEvents(before: Date) throws -> Int

    /// Deletes the per-minute rollups (the overview's attempts and link events) the overview no longer reads: those
    /// two days older than `now`.
    func pruneRollups(now: Date) throws

    /// One step of pruning messages older than `before` (`ledger.messageRetention`): among the `limit` rows after id
    /// `after`, deletes the finished ones (a campaign's only once the whole campaign is) with their codes, attempts,
    /// link events, feedback and events, in one short transaction. `next` is where the next step starts. With
    /// `archive` (`ledger.archive`), the messages' audit rows are handed to it first; when it throws, nothing is
    /// deleted.
    func pruneMessages(
        before: Date, after: Int64, limit: Int, now: Date, archive: (@Sendable ([AuditRow]) throws -> Void)?
    ) throws -> MessagePrune

    /// Takes, or renews, `worker`'s lease on the message sweep until `now + ttl`; false while another worker's lease
    /// runs. The worker that holds it is the one that sweeps.
    func leaseMessageSweep(worker: String, now: Date, ttl: TimeInterval) throws -> Bool

    /// Gives up `worker`'s lease on the message sweep, if it holds it.
    func releaseMessageSweep(worker: String) throws
}

extension WorkerRegistry {
    /// One step of pruning messages, archiving none.
    public func pruneMessages(before: Date, after: Int64, limit: Int, now: Date) throws -> MessagePrune {
        try pruneMessages(before: before, after: after, limit: limit, now: now, archive: nil)
    }
}

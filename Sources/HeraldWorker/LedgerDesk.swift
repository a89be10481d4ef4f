import Foundation
import HeraldCore
import HeraldStore
import Logging

/// The one thread of a worker process that writes the ledger: it claims rows for every connection and records
/// every connection's outcomes, many at a time.
///
/// The send loop hands in outcomes as sends finish; the desk records all that are waiting in one transaction
/// (a group commit: one WAL append for the batch). It records when a connection cannot start its next send
/// until it does, when a batch is full, or once the oldest outcome has waited `recordWait` (5 ms) — so under
/// load many outcomes share a commit, and a lone send is recorded within milliseconds. A connection starts a
/// send only while fewer than `ClaimPolicy.unrecordedPerConnection` (`worker.unrecordedPerConnection`, 64 by
/// default) of its sends are unrecorded, so a crash can duplicate only those (`returnOrphans` reads that many
/// first rows of each connection's claim as possibly started). The desk wakes the send loop
/// (`MailDispatcher.waker`) when it has claimed or recorded what a connection was waiting for.
///
/// Claims are made per connection (`ClaimOwner`: worker id, connection and bound) when the connection runs
/// low; recording goes first, so a claim never holds a connection's outcome back for long.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`'s lock, or touched by the desk thread only.
final class LedgerDesk: @unchecked Sendable {
    /// A finished send on its way to the ledger.
    struct Handed: Sendable {
        let connection: Int
        let outcome: Worker.Outcome
        let at: MonotonicInstant
    }

    /// What the desk keeps per connection, under the lock.
    private struct Lane {
        /// Claimed rows waiting for the connection.
        var inbox: [ClaimedMessage] = []
        /// The connection asked for rows (and has not had them yet).
        var wants = false
        /// No more rows will come (`--until-empty` found the queue empty, or the desk stopped).
        var finished = false
        /// Not before this time (after an empty claim).
        var nextClaim = MonotonicInstant.distantPast
        /// Not before this time even when this process queues mail (after a claim that found fewer rows than it could take).
        var claimFloor = MonotonicInstant.distantPast
        /// When this connection's claims were made that failed without saying whether they committed.
        var abandonedClaims: [Date] = []
        /// Outcomes handed in and recorded, counted.
        var handed = 0
        var recorded = 0
        /// Rows claimed for this connection and not yet recorded or given back.
        var outstanding = 0
    }

    private let worker: Worker
    private let untilEmpty: Bool
    private let watch: LedgerWatch
    private let stop: StopSignal
    private let fence: ClaimFence
    /// Its timed waits run on the monotonic clock: a step of the wall clock moves no claim.
    private let condition = MonotonicCondition()
    private var lanes: [Lane]
    /// Each connection's claim owner, `<worker id>/<connection>:<bound>` (`ClaimOwner`).
    private let owners: [String]
    private var outcomes: [Handed] = []
    /// When the oldest outcome in `outcomes` was handed in.
    private var oldestOutcome = MonotonicInstant.distantFuture
    /// `flush` is waiting: record whatever is handed in at once.
    private var flushing = false
    /// The send loop found a connection waiting for the desk (rows, or records); the next claim or record wakes it.
    private var sendLoopWaits = false
    /// The most outcomes recorded in one commit.
    static let maxBatch = 256
    /// Set when the desk fails; connections stop.
    private var failed = false
    private let done = DispatchSemaphore(value: 0)
    /// Written by the desk thread; read after `waitUntilDone()`.
    private(set) var summary = WorkerSummary()
    private(set) var error: (any Error)?
    private var lastWaitLog = Date.distantPast
    private var lastWaitText = ""

    /// Wakes the send loop after rows were claimed, outcomes recorded, or the desk failed.
    private let wake: @Sendable () -> Void

    init(
        worker: Worker, owners: [String], untilEmpty: Bool, watch: LedgerWatch, stop: StopSignal, fence: ClaimFence,
        wake: @escaping @Sendable () -> Void
    ) {
        self.wake = wake
        self.fence = fence
        self.worker = worker
        self.untilEmpty = untilEmpty
        self.watch = watch
        self.stop = stop
        self.owners = owners
        lanes = owners.map { _ in Lane() }
    }

    // MARK: - The send loop's side (never blocks, except `flush`)

    /// What the desk has for a connection.
    enum Rows {
        case rows([ClaimedMessage])
        /// None yet: they have been asked for, and `wake` is called when they come.
        case waiting
        /// None will come (`--until-empty` found the queue empty, or the desk stopped or failed).
        case finished
    }

    /// Rows claimed for `connection`, asking for them when there are none.
    func rows(_ connection: Int) -> Rows {
        condition.lock()
        defer { condition.unlock() }
        if !lanes[connection].inbox.isEmpty {
            let rows = lanes[connection].inbox
            lanes[connection].inbox = []
            return .rows(rows)
        }
        if lanes[connection].finished || failed || stop.isStopped { return .finished }
        sendLoopWaits = true
        if !lanes[connection].wants {
            lanes[connection].wants = true
            condition.broadcast()
        }
        return .waiting
    }

    /// Mail was queued in this process: connections waiting for rows claim now, not at their next poll.
    ///
    /// The desk is woken only when a connection may now claim sooner: at 2,000 requests a second it was woken for
    /// each, to find nothing to do.
    func queued() {
        condition.lock()
        let now = MonotonicInstant.now()
        var sooner = false
        for index in lanes.indices where lanes[index].nextClaim > now {
            let next = max(now, min(lanes[index].claimFloor, now.adding(Self.trickleWait)))
            if next < lanes[index].nextClaim {
                lanes[index].nextClaim = next
                sooner = true
            }
        }
        if sooner { condition.broadcast() }
        condition.unlock()
    }

    /// Asks for more rows ahead of need.
    func ask(_ connection: Int) {
        condition.lock()
        if !lanes[connection].wants && lanes[connection].inbox.isEmpty {
            lanes[connection].wants = true
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Whether `connection` may start a send beside the `inFlight` it has under way: fewer than
    /// `unrecordedPerConnection` of its sends are in flight or await recording (`wake` is called as records commit).
    func mayStart(_ connection: Int, inFlight: Int) -> Bool {
        condition.withLock {
            let may = lanes[connection].handed - lanes[connection].recorded + inFlight < worker.policy.unrecordedPerConnection
            if !may { sendLoopWaits = true }
            return may
        }
    }

    /// Hands in a finished send for recording. Returns false when the desk has failed (the connection
    /// stops; its unrecorded rows return once this worker is found gone).
    func hand(_ outcome: Worker.Outcome, from connection: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !failed else { return false }
        let now = MonotonicInstant.now()
        if outcomes.isEmpty { oldestOutcome = now }
        outcomes.append(Handed(connection: connection, outcome: outcome, at: now))
        lanes[connection].handed += 1
        // The desk needs waking only when this outcome may make it record now.
        if outcomes.count == 1 || mustRecord(now: nil) { condition.broadcast() }
        return true
    }

    /// Whether the desk has failed (the send loop stops).
    var hasFailed: Bool { condition.withLock { failed } }

    /// Waits until every outcome handed in is recorded (at the end), or the desk failed.
    func flush() {
        condition.lock()
        defer { condition.unlock() }
        flushing = true
        condition.broadcast()
        while lanes.contains(where: { $0.recorded < $0.handed }) && !failed { condition.wait() }
    }

    /// Rows a connection gave back (or will never send) are no longer its own.
    func settled(_ count: Int, connection: Int) {
        condition.lock()
        lanes[connection].outstanding -= count
        condition.unlock()
    }

    /// Empties every connection's inbox (the worker was given up for dead): the rows claimed and not yet taken, per
    /// connection, for the send loop to give back.
    func forgetClaims() -> [(connection: Int, rows: [ClaimedMessage])] {
        condition.withLock {
            var forgotten: [(connection: Int, rows: [ClaimedMessage])] = []
            for index in lanes.indices where !lanes[index].inbox.isEmpty {
                forgotten.append((index, lanes[index].inbox))
                lanes[index].inbox = []
            }
            return forgotten
        }
    }

    /// The connection will take nothing more.
    func leave(_ connection: Int) {
        condition.lock()
        lanes[connection].finished = true
        lanes[connection].wants = false
        condition.broadcast()
        condition.unlock()
    }

    // MARK: - The desk's thread

    func run() {
        defer { done.signal() }
        do {
            try work()
        } catch {
            self.error = error
            condition.lock()
            failed = true
            condition.broadcast()
            condition.unlock()
            wake()
        }
    }

    func waitUntilDone() { done.wait() }

    private func work() throws {
        while true {
            condition.lock()
            var claimFor: Int?
            var recordNow = false
            while true {
                let now = MonotonicInstant.now()
                claimFor = stop.isStopped ? nil : lanes.indices.first { lanes[$0].wants && !lanes[$0].finished && lanes[$0].nextClaim <= now }
                recordNow = mustRecord(now: now)
                if recordNow || claimFor != nil { break }
                if outcomes.isEmpty && lanes.allSatisfy(\.finished) {
                    condition.unlock()
                    return
                }
                // The next claim that comes due (none once stopping: the connections are leaving), at most 0.2 s away.
                let due = stop.isStopped ? nil : lanes.lazy.filter { $0.wants && !$0.finished }.map(\.nextClaim).min()
                let recordDue = oldestOutcome.adding(Self.recordWait)
                _ = condition.wait(until: max(now, min(due ?? .distantFuture, recordDue, now.adding(0.2))))
            }
            let batch = recordNow ? Array(outcomes.prefix(Self.maxBatch)) : []
            if recordNow {
                outcomes.removeFirst(batch.count)
                oldestOutcome = outcomes.first?.at ?? .distantFuture
            }
            condition.unlock()

            // Outcomes first, then at most one claim: connections waiting on either are served in turn.
            if !batch.isEmpty { try record(batch) }
            if let connection = claimFor { try claim(for: connection) }
        }
    }

    /// After a claim that found fewer due rows than it could take, how long the connection waits before it claims again,
    /// even when this process queues mail (`queued()`); `--until-empty` does not wait.
    ///
    /// Under a trickle of requests each claim otherwise took the one or two rows queued since the last, in a transaction
    /// that holds the ledger's writer (sweeps, the claim, the codes) while the API's group commits wait for it: at
    /// 2,000 `sendOobCode` a second the desk made 600 claims a second of two rows each. Rows queued meanwhile now share
    /// one claim; a message waits at most this much longer to be sent.
    static let trickleWait: TimeInterval = 0.02

    /// How long an outcome may wait for others to share its commit, while no connection waits for it.
    static let recordWait: TimeInterval = 0.005

    /// Whether the outcomes waiting should be recorded now (under the lock): a connection cannot start its next
    /// send until they are, a batch is full, the oldest has waited `recordWait`, or the desk is finishing.
    /// `now` nil: only the conditions that do not depend on time.
    private func mustRecord(now: MonotonicInstant?) -> Bool {
        guard !outcomes.isEmpty else { return false }
        if flushing || stop.isStopped || outcomes.count >= Self.maxBatch { return true }
        if lanes.contains(where: { $0.handed - $0.recorded >= worker.policy.unrecordedPerConnection }) { return true }
        guard let now else { return false }
        return now >= oldestOutcome.adding(Self.recordWait)
    }

    /// Records a batch of outcomes in one transaction, then tells each connection how far it is recorded.
    private func record(_ batch: [Handed]) throws {
        var records: [(claimed: ClaimedMessage, record: DeliveryRecord)] = []
        records.reserveCapacity(batch.count)
        for handed in batch { records.append((handed.outcome.claimed, worker.decide(handed.outcome, summary: &summary))) }
        let policy = worker.policy
        let store = worker.store
        // A send that happened must be recorded: an unavailable ledger is waited for, even a while past a stop.
        _ = try watch.run("recording deliveries", stop: stop, persistence: .afterStop(worker.stopGrace)) {
            try store.record(records, policy: policy)
        }
        condition.lock()
        for handed in batch {
            lanes[handed.connection].recorded += 1
            lanes[handed.connection].outstanding -= 1
        }
        unlockWakingTheSendLoop()
        for (handed, entry) in zip(batch, records) {
            worker.log(handed.outcome, entry.record)
            worker.metrics.count(handed.outcome, entry.record)
        }
    }

    /// Claims rows for one connection; an empty queue ends the lane under `--until-empty`, else it waits a while.
    private func claim(for connection: Int) throws {
        let owner = owners[connection]
        let store = worker.store
        let policy = worker.policy
        guard !fence.isRevoked else {
            // Given up for dead: no claims until the send loop has let go and the worker has rejoined.
            condition.withLock { lanes[connection].nextClaim = MonotonicInstant.now().adding(0.2) }
            return
        }
        let tick = MonotonicInstant.now()
        // A claim that failed may still have committed (the connection cut after its COMMIT): the next one returns
        // whatever it took, so those rows do not sit in 'sending' until their lease ends.
        var abandoned = condition.withLock { lanes[connection].abandonedClaims }
        let claimed = try watch.run("claiming mail", stop: stop, persistence: .untilStopped) { () -> ClaimedBatch in
            let now = Date()
            do {
                return try store.claimBatch(policy, owner: owner, now: now, abandoning: abandoned)
            } catch {
                abandoned.append(now)
                throw error
            }
        }
        condition.withLock { lanes[connection].abandonedClaims = claimed == nil ? abandoned : [] }
        guard let batch = claimed else { return }
        let rows = batch.messages
        var status: QueueStatus?
        if rows.isEmpty {
            status = try watch.run("reading the queue", stop: stop, persistence: .untilStopped) { try store.queueStatus() }
            guard status != nil else { return }
        }
        condition.lock()
        defer { unlockWakingTheSendLoop() }
        guard let status else {  // rows came (a status is read only for an empty claim)
            lanes[connection].inbox += rows
            lanes[connection].outstanding += rows.count
            lanes[connection].wants = false
            // Counted before suppressed rows were cancelled: a full claim of a backlog with some is no trickle.
            if batch.taken < policy.limit && !untilEmpty {
                // The queue is trickling: let what is queued meanwhile share the next claim.
                lanes[connection].claimFloor = tick.adding(Self.trickleWait)
                lanes[connection].nextClaim = lanes[connection].claimFloor
            }
            return
        }
        let ours = lanes.reduce(0) { $0 + $1.outstanding }
        if untilEmpty && status.pending == 0 {
            lanes[connection].finished = true
            lanes[connection].wants = false
            return
        }
        if untilEmpty && ours < status.pending { explainWait(status, owner: owner) }
        // When the only pending rows are our own in-flight ones, look again soon: they settle quickly. An empty
        // queue is looked at every poll interval (sooner when this process queues mail: `queued()`).
        let untilDue = status.pending > 0 && ours >= status.pending ? 0.01 : status.nextDue.map { $0.timeIntervalSinceNow } ?? worker.pollInterval
        lanes[connection].nextClaim = MonotonicInstant.now().adding(min(worker.pollInterval, max(0.01, untilDue)))
    }

    /// Tells the connections' side what changed and releases the lock; wakes the send loop only when it
    /// found a connection waiting for the desk since the last wake.
    private func unlockWakingTheSendLoop() {
        condition.broadcast()
        let waiting = sendLoopWaits
        sendLoopWaits = false
        condition.unlock()
        if waiting { wake() }
    }

    /// `--until-empty` says what it is waiting for, when that changes and every 10 s.
    private func explainWait(_ status: QueueStatus, owner: String) {
        var parts: [String] = []
        var metadata: Logger.Metadata = ["connection": "\(owner)", "sending": "\(status.sending)"]
        if status.sending > 0 { parts.append("\(status.sending) row(s) held by a worker") }
        let waiting = status.pending - status.sending
        metadata["waiting"] = "\(waiting)"
        if waiting > 0 {
            let dueIn = status.nextDue.map { max(0, Int($0.timeIntervalSinceNow.rounded(.up))) }
            if let dueIn { metadata["nextDueSeconds"] = "\(dueIn)" }
            parts.append("\(waiting) row(s) queued or deferred" + (dueIn.map { " (next due in \($0) s)" } ?? ""))
        }
        let text = "waiting for " + parts.joined(separator: " and ")
        guard text != lastWaitText || Date().timeIntervalSince(lastWaitLog) >= 10 else { return }
        lastWaitText = text
        lastWaitLog = Date()
        worker.logger.info("\(text)", metadata: metadata)
    }
}

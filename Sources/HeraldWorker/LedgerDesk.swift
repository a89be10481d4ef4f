import Foundation
import HeraldCore
import HeraldStore

/// The one thread of a worker process that writes the ledger: it claims rows for every connection and records
/// every connection's outcomes, many at a time.
///
/// Connections hand in outcomes as they finish sends; the desk takes all that are waiting and records them in
/// one transaction (a group commit: one WAL append for the batch), then tells each connection how far it is
/// recorded. A connection starts a send only once all but its latest outcome are recorded, so at most two of
/// its sends are ever unrecorded — one being recorded, one being sent — and a crash can duplicate only those
/// (`returnOrphans` reads the first two rows of each connection's claim as possibly started).
///
/// Claims are made per connection (`<worker id>/<connection>` as owner, as the orphan rule needs) when the
/// connection runs low; recording goes first, so a claim never holds a connection's outcome back for long.
///
/// `@unchecked Sendable`: every mutable field is guarded by `condition`'s lock, or touched by the desk thread only.
final class LedgerDesk: @unchecked Sendable {
    /// A finished send on its way to the ledger.
    struct Handed: Sendable {
        let connection: Int
        let outcome: Worker.Outcome
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
        var nextClaim = Date.distantPast
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
    private let condition = NSCondition()
    private var lanes: [Lane]
    /// Each connection's claim owner, `<worker id>/<connection>`.
    private let owners: [String]
    private var outcomes: [Handed] = []
    /// Set when the desk fails; connections stop.
    private var failed = false
    private let done = DispatchSemaphore(value: 0)
    /// Written by the desk thread; read after `waitUntilDone()`.
    private(set) var summary = WorkerSummary()
    private(set) var error: (any Error)?
    private var lastWaitLog = Date.distantPast
    private var lastWaitText = ""

    init(worker: Worker, owners: [String], untilEmpty: Bool, watch: LedgerWatch, stop: StopSignal) {
        self.worker = worker
        self.untilEmpty = untilEmpty
        self.watch = watch
        self.stop = stop
        self.owners = owners
        lanes = owners.map { _ in Lane() }
    }

    // MARK: - The connections' side

    /// Rows for `connection`: waits until some are claimed for it; nil when none will come (or the desk stopped).
    func take(_ connection: Int) -> [ClaimedMessage]? {
        condition.lock()
        defer { condition.unlock() }
        while lanes[connection].inbox.isEmpty && !lanes[connection].finished && !failed && !stop.isStopped {
            lanes[connection].wants = true
            condition.broadcast()
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
        }
        let rows = lanes[connection].inbox
        lanes[connection].inbox = []
        return rows.isEmpty ? nil : rows
    }

    /// Asks for more rows ahead of need, without waiting.
    func ask(_ connection: Int) {
        condition.lock()
        if !lanes[connection].wants && lanes[connection].inbox.isEmpty {
            lanes[connection].wants = true
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Hands in a finished send, then waits until every earlier outcome of this connection is recorded.
    /// Returns false when the desk has failed (the connection stops; its unrecorded rows return once this
    /// worker is found gone).
    func hand(_ outcome: Worker.Outcome, from connection: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !failed else { return false }
        outcomes.append(Handed(connection: connection, outcome: outcome))
        lanes[connection].handed += 1
        condition.broadcast()
        let earlier = lanes[connection].handed - 1
        while lanes[connection].recorded < earlier && !failed { condition.wait() }
        return !failed
    }

    /// Waits until every outcome of this connection is recorded (before a pause, or at the end).
    func flush(_ connection: Int) {
        condition.lock()
        defer { condition.unlock() }
        while lanes[connection].recorded < lanes[connection].handed && !failed { condition.wait() }
    }

    /// Rows a connection gave back (or will never send) are no longer its own.
    func settled(_ count: Int, connection: Int) {
        condition.lock()
        lanes[connection].outstanding -= count
        condition.unlock()
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
        }
    }

    func waitUntilDone() { done.wait() }

    private func work() throws {
        while true {
            condition.lock()
            var claimFor: Int?
            while true {
                let now = Date()
                claimFor = stop.isStopped ? nil : lanes.indices.first { lanes[$0].wants && !lanes[$0].finished && lanes[$0].nextClaim <= now }
                if !outcomes.isEmpty || claimFor != nil { break }
                if lanes.allSatisfy(\.finished) {
                    condition.unlock()
                    return
                }
                // The next claim that comes due (none once stopping: the connections are leaving), at most 0.2 s away.
                let due = stop.isStopped ? nil : lanes.lazy.filter { $0.wants && !$0.finished }.map(\.nextClaim).min()
                _ = condition.wait(until: max(now, min(due ?? .distantFuture, now.addingTimeInterval(0.2))))
            }
            let batch = outcomes
            outcomes = []
            condition.unlock()

            // Outcomes first, then at most one claim: connections waiting on either are served in turn.
            if !batch.isEmpty { try record(batch) }
            if let connection = claimFor { try claim(for: connection) }
        }
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
        condition.broadcast()
        condition.unlock()
        for (handed, entry) in zip(batch, records) { worker.log(handed.outcome, entry.record) }
    }

    /// Claims rows for one connection; an empty queue ends the lane under `--until-empty`, else it waits a while.
    private func claim(for connection: Int) throws {
        let owner = owners[connection]
        let store = worker.store
        let policy = worker.policy
        let now = Date()
        guard let rows = try watch.run("claiming mail", stop: stop, persistence: .untilStopped, { try store.claim(policy, owner: owner, now: now) })
        else { return }
        var status: QueueStatus?
        if rows.isEmpty {
            status = try watch.run("reading the queue", stop: stop, persistence: .untilStopped) { try store.queueStatus() }
            guard status != nil else { return }
        }
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        guard let status else {  // rows came (a status is read only for an empty claim)
            lanes[connection].inbox += rows
            lanes[connection].outstanding += rows.count
            lanes[connection].wants = false
            return
        }
        let ours = lanes.reduce(0) { $0 + $1.outstanding }
        if untilEmpty && status.pending == 0 {
            lanes[connection].finished = true
            lanes[connection].wants = false
            return
        }
        if untilEmpty && ours < status.pending { explainWait(status, owner: owner) }
        // When the only pending rows are our own in-flight ones, look again soon: they settle quickly.
        let untilDue = ours >= status.pending ? 0.01 : status.nextDue.map { $0.timeIntervalSinceNow } ?? worker.pollInterval
        lanes[connection].nextClaim = Date().addingTimeInterval(min(worker.pollInterval, max(0.01, untilDue)))
    }

    /// `--until-empty` says what it is waiting for, when that changes and every 10 s.
    private func explainWait(_ status: QueueStatus, owner: String) {
        var parts: [String] = []
        if status.sending > 0 { parts.append("\(status.sending) row(s) held by a worker") }
        let waiting = status.pending - status.sending
        if waiting > 0 {
            let due = status.nextDue.map { " (next due in \(max(0, Int($0.timeIntervalSinceNow.rounded(.up)))) s)" } ?? ""
            parts.append("\(waiting) row(s) queued or deferred\(due)")
        }
        let text = "waiting for " + parts.joined(separator: " and ")
        guard text != lastWaitText || Date().timeIntervalSince(lastWaitLog) >= 10 else { return }
        lastWaitText = text
        lastWaitLog = Date()
        worker.logger.info("\(text)", metadata: ["connection": "\(owner)"])
    }
}

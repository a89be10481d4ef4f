import Foundation
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// The worker process's presence in the ledger, on its own thread: registers it, beats its
/// heartbeat, returns the rows of workers that died, checkpoints the ledger's log, folds the outbox tallies and
/// rollups (PostgreSQL), and prunes the per-minute rollups past two days and link events and abuse counters past
/// `ledger.eventRetention` (at start, then hourly), and messages past `ledger.messageRetention` (a sweep that starts
/// hourly and takes small steps for a quarter of each heartbeat interval, pausing between them, so neither the
/// heartbeat nor the ledger's writer waits on it for long).
///
/// A worker on this host is judged by its process alone: gone is dead, running is alive however long it has been
/// paused. One on another host is dead once its heartbeat is older than `worker.heartbeatTimeout` by the ledger's
/// clock (PostgreSQL's), and only by a judge that has itself beaten steadily for that long: a judge whose beat
/// failed, blocked, or came late (its process paused, its ledger frozen, its clock stepped) starts that spell again,
/// so an outage that stopped everyone's heartbeats kills no one. The judged worker learns of it at its next beat
/// and lets go of its rows before it sends again (`ClaimFence`).
///
/// `@unchecked Sendable`: `steadySince`, `lastBeat`, `lastCheckpoint` and `lastPrune` are only touched by the housekeeping thread.
final class Housekeeper: @unchecked Sendable {
    let me: WorkerProcess
    private let store: any OutboxStore
    private let logger: Logger
    private let watch: LedgerWatch
    private let stop: StopSignal
    private let heartbeatTimeout: TimeInterval
    private let maxAttempts: Int
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private var steadySince: MonotonicInstant?
    private var lastBeat = MonotonicInstant.now()
    private var lastCheckpoint = Date()
    /// What this worker's heartbeats tell its send loop.
    let fence: ClaimFence
    private var lastPrune = Date.distantPast
    /// What the connections last said of the relay, and whether the ledger has it yet (written with a heartbeat).
    private let relay = Mutex<(problem: RelayProblem?, written: Bool)>((nil, true))
    private let retention: HeraldConfiguration.Ledger
    /// Where the message sweep goes on at the next beat (the last id it looked at); nil while none is under way.
    private var messageSweep: Int64?
    /// The hourly look found message retention on: a sweep starts when none runs (on the chosen worker).
    private var sweepDue = false
    /// Whether this worker held the lease on the message sweep at its last beat (`leaseMessageSweep`).
    private var sweeper = false
    /// `ledger.archive`, and the file the current sweep appends to (one per sweep).
    private let archive: LedgerArchive?
    private var sweepArchive: LedgerArchive.File?
    /// Whether the archive's last failure was logged (once until a step succeeds again).
    private var archiveFailureLogged = false
    private var prunedInSweep = 0
    static let checkpointInterval: TimeInterval = 10
    static let pruneInterval: TimeInterval = 3600
    /// Rows one step of the message sweep looks at, and at most deletes, in one transaction.
    static let messagesPerStep = 100
    /// Free pages one step of `reclaimSpace` gives back (128 KiB of 4 KiB pages). Moving a page costs about 175 µs
    /// (a million-message ledger gave 304 MiB back at 3.0 MiB/s in steps of 256 pages, and sendOobCode's p99 was
    /// 50 ms meanwhile); steps of 32 hold the writer about as long as a prune step, for the same rate.
    static let pagesPerStep = 32

    init(
        store: any OutboxStore, logger: Logger, watch: LedgerWatch, stop: StopSignal, heartbeatTimeout: TimeInterval, maxAttempts: Int,
        retention: HeraldConfiguration.Ledger = HeraldConfiguration.Ledger(), archive: LedgerArchive? = nil
    ) {
        let now = Date()
        me = WorkerProcess(
            id: Self.randomID(), host: WorkerHost.identity, pid: ProcessInfo.processInfo.processIdentifier, startedAt: now, heartbeatAt: now)
        self.store = store
        self.logger = logger
        self.watch = watch
        self.stop = stop
        self.heartbeatTimeout = heartbeatTimeout
        self.maxAttempts = maxAttempts
        fence = ClaimFence(heartbeatTimeout: heartbeatTimeout)
        self.retention = retention
        self.archive = archive
    }

    /// How often the heartbeat is written: a sixth of the timeout, between 0.5 s and 5 s.
    var interval: TimeInterval { min(5, max(0.5, heartbeatTimeout / 6)) }

    /// Starts the thread; returns once this worker is registered and dead workers' rows are back
    /// (or the worker was stopped first).
    func start() {
        let thread = Thread.named("herald-housekeeper") { [self] in
            defer { done.signal() }
            run()
        }
        thread.start()
        ready.wait()
    }

    /// Waits for the thread after `finish()`; the worker then counts as cleanly stopped.
    func waitUntilDone() { done.wait() }

    private func run() {
        var announced = false
        defer { if !announced { ready.signal() } }
        do {
            guard try watch.run("registering the worker", stop: stop, persistence: .untilStopped, { try store.register(me) }) != nil
            else { return }
            (steadySince, lastBeat) = (.now(), .now())
            fence.confirm()
            sweep()
            prune()
            ready.signal()
            announced = true
            while !stop.wait(interval) {
                beat()
            }
            _ = try watch.run("deregistering the worker", stop: stop, persistence: .afterStop(2)) {
                try? store.releaseMessageSweep(worker: me.id)
                try store.deregister(worker: me.id, now: Date())
            }
        } catch {
            logger.warning("worker housekeeping stopped", metadata: ["error": "\(error)"])
        }
    }

    /// The relay began or went on failing this worker's connections (`problem`), or answers again (nil); the ledger
    /// learns it with the next heartbeat, for `campaign watch` and the console of any process.
    func relayChanged(_ problem: RelayProblem?) {
        relay.withLock { $0 = (problem, false) }
    }

    /// Writes what the relay did since the last beat, if anything changed; on failure it is tried again next beat.
    private func reportRelay() {
        guard
            let problem = relay.withLock({ state -> RelayProblem?? in
                defer { state.written = true }
                return state.written ? nil : .some(state.problem)
            })
        else { return }
        do {
            try store.reportRelay(worker: me.id, problem: problem)
        } catch {
            relay.withLock { if $0.problem == problem { $0.written = false } }
        }
    }

    private func beat() {
        let began = MonotonicInstant.now()
        let gap = began.seconds(since: lastBeat)
        lastBeat = began
        do {
            let counted = try store.heartbeat(worker: me.id, now: Date())
            // A beat that came late or waited says nothing about the others: judge them only after a steady spell.
            if gap > interval * 2 + 1 || MonotonicInstant.now().seconds(since: began) > interval {
                steadySince = .now()
            } else if steadySince == nil {
                steadySince = .now()
            }
            if counted {
                fence.confirm()
            } else if try !rejoin() {
                return
            }
        } catch {
            steadySince = nil  // the ledger's trouble is logged by the threads that wait for it
            return
        }
        reportRelay()
        sweep()
        prune()
        pruneMessages()
        reclaimSpace()
        do { try store.foldTallies() } catch { logger.debug("tallies not folded", metadata: ["error": "\(error)"]) }
        if Date().timeIntervalSince(lastCheckpoint) >= Self.checkpointInterval {
            lastCheckpoint = Date()
            do { try store.checkpoint() } catch { logger.debug("checkpoint skipped", metadata: ["error": "\(error)"]) }
        }
    }

    /// This worker was given up for dead by another while it was paused or cut off: its rows went back to the
    /// queue. The send loop lets go of them; once it has, the worker counts as alive again. True once rejoined.
    private func rejoin() throws -> Bool {
        if !fence.isRevoked {
            logger.error(
                "this worker was given up for dead (the ledger saw no heartbeat for worker.heartbeatTimeout) and its rows went back to the queue; it sends none of them and rejoins",
                metadata: ["worker": "\(me.id)"])
            fence.revoke()
        }
        guard fence.mayRejoin() else { return false }
        try store.rejoin(worker: me.id, now: Date())
        fence.confirm()
        logger.info("worker rejoined the ledger", metadata: ["worker": "\(me.id)"])
        return true
    }

    /// Returns the rows of every worker that is gone.
    private func sweep() {
        do {
            let steady = steadySince.map { MonotonicInstant.now().seconds(since: $0) >= heartbeatTimeout } ?? false
            for worker in try store.liveWorkers(now: Date()) where worker.id != me.id {
                let here = worker.host == me.host
                let vanished = here && !Self.processExists(worker.pid)
                let silent = !here && steady && worker.heartbeatAge > heartbeatTimeout
                guard vanished || silent else { continue }
                let why = vanished ? "its process \(worker.pid) is gone" : "no heartbeat for \(Int(worker.heartbeatAge)) s"
                let result = try store.returnOrphans(
                    ofWorker: worker.id, reason: "interrupted: the worker died (\(why)) before recording a result", maxAttempts: maxAttempts,
                    now: Date())
                logger.warning(
                    "worker \(worker.id) died (\(why)); its rows are back in the queue",
                    metadata: ["worker": "\(worker.id)", "interrupted": "\(result.interrupted)", "returned": "\(result.returned)"])
            }
        } catch {
            logger.debug("could not look for dead workers", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes the per-minute rollups older than two days and what `ledger.eventRetention` no longer keeps, once an
    /// hour.
    private func prune() {
        let now = Date()
        guard now.timeIntervalSince(lastPrune) >= Self.pruneInterval else { return }
        lastPrune = now
        if retention.messageRetention > 0 { sweepDue = true }
        do {
            try store.pruneRollups(now: now)
            guard retention.eventRetention > 0 else { return }
            let deleted = try store.pruneEvents(before: now.addingTimeInterval(-retention.eventRetention))
            if deleted > 0 { logger.info("pruned \(deleted) ledger events older than the retention", metadata: ["events": "\(deleted)"]) }
        } catch {
            lastPrune = .distantPast
            logger.debug("pruning skipped", metadata: ["error": "\(error)"])
        }
    }

    /// Runs `step` again and again while a quarter of the heartbeat interval lasts (the last step may end after it),
    /// with a pause as long as each step took between steps, so the ledger's writer is free at least half that time;
    /// ends when `step` answers false.
    private func timeBoxed(_ step: () -> Bool) {
        let began = MonotonicInstant.now()
        while MonotonicInstant.now().seconds(since: began) < interval / 4 {
            let stepBegan = MonotonicInstant.now()
            guard step() else { return }
            let took = MonotonicInstant.now().seconds(since: stepBegan)
            guard MonotonicInstant.now().seconds(since: began) + took < interval / 4 else { return }
            if stop.wait(took) { return }
        }
    }

    /// The message sweep's share of a heartbeat: time-boxed steps of `messagesPerStep` rows, the finished ones past
    /// `ledger.messageRetention` deleted (archived first with `ledger.archive`). A step that fails is taken again at
    /// the next beat.
    private func pruneMessages() {
        guard retention.messageRetention > 0 else { return }
        do {
            sweeper = try store.leaseMessageSweep(worker: me.id, now: Date(), ttl: heartbeatTimeout)
        } catch {
            sweeper = false
            logger.debug("message sweep lease not taken", metadata: ["error": "\(error)"])
        }
        guard sweeper else {
            messageSweep = nil  // another worker sweeps; were it to stop, this one takes over at its next hourly look
            return
        }
        if messageSweep == nil && sweepDue {
            (messageSweep, sweepDue, prunedInSweep) = (0, false, 0)
            sweepArchive = archive?.file(began: Date(), worker: me.id)
        }
        timeBoxed {
            guard let after = messageSweep else { return false }
            let now = Date()
            var archiving: (@Sendable ([AuditRow]) throws -> Void)?
            if let file = sweepArchive { archiving = { rows in try file.append(rows) } }
            do {
                let step = try store.pruneMessages(
                    before: now.addingTimeInterval(-retention.messageRetention), after: after, limit: Self.messagesPerStep, now: now,
                    archive: archiving)
                messageSweep = step.next
                prunedInSweep += step.deleted
                archiveFailureLogged = false
            } catch let failure as LedgerArchive.WriteFailure {
                // The file may end in a broken member: the next step starts a new one.
                sweepArchive = archive?.file(began: Date(), worker: me.id)
                if !archiveFailureLogged {
                    logger.warning(
                        "message pruning paused: \(failure); nothing is deleted until the archive takes the messages",
                        metadata: ["error": "\(failure)"])
                    archiveFailureLogged = true
                }
                return false
            } catch {
                logger.debug("message pruning paused", metadata: ["error": "\(error)"])
                return false
            }
            guard messageSweep == nil else { return true }
            if prunedInSweep > 0 {
                logger.info("pruned \(prunedInSweep) messages older than ledger.messageRetention", metadata: ["messages": "\(prunedInSweep)"])
            }
            prunedInSweep = 0
            return false
        }
    }

    /// Between message sweeps, time-boxed steps that give the ledger's free pages beyond a tenth of the file back to
    /// the file system, `pagesPerStep` at a time (SQLite ledgers made with incremental auto-vacuum).
    private func reclaimSpace() {
        guard sweeper, messageSweep == nil else { return }
        timeBoxed {
            do {
                return try store.reclaimSpace(pages: Self.pagesPerStep) > 0
            } catch {
                logger.debug("space not reclaimed", metadata: ["error": "\(error)"])
                return false
            }
        }
    }

    private static func randomID() -> String {
        (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Whether `pid` is a running process here (a zombie awaiting its parent counts as gone).
    static func processExists(_ pid: Int32) -> Bool {
        if kill(pid, 0) != 0 && errno == ESRCH { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return true }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }
}

/// Where this process runs, as worker registrations name it.
public enum WorkerHost {
    /// The hostname and this boot's id: a PID means something only on the same host and boot.
    public static let identity: String = {
        let boot = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var name = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&name, name.count - 1) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        return host + (boot.map { "/" + $0 } ?? "")
    }()
}

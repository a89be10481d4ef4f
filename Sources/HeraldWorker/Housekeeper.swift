import Foundation
import HeraldCore
import HeraldStore
import Logging

/// The worker process's presence in the ledger, on its own thread: registers it, beats its
/// heartbeat, returns the rows of workers that died, checkpoints the ledger's log, and prunes link
/// events and abuse counters past `ledger.eventRetention` (at start, then hourly).
///
/// A worker on this host whose process is gone is noticed at the next beat; one elsewhere once
/// its heartbeat is older than `worker.heartbeatTimeout` — and only after this worker has itself
/// reached the ledger for that long, so an outage that stopped everyone's heartbeats kills no one.
///
/// `@unchecked Sendable`: `steadySince`, `lastCheckpoint` and `lastPrune` are only touched by the housekeeping thread.
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
    private var steadySince: Date?
    private var lastCheckpoint = Date()
    private var lastPrune = Date.distantPast
    private let eventRetention: TimeInterval
    static let checkpointInterval: TimeInterval = 10
    static let pruneInterval: TimeInterval = 3600

    init(
        store: any OutboxStore, logger: Logger, watch: LedgerWatch, stop: StopSignal, heartbeatTimeout: TimeInterval, maxAttempts: Int,
        eventRetention: TimeInterval = 0
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
        self.eventRetention = eventRetention
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
            steadySince = Date()
            sweep()
            prune()
            ready.signal()
            announced = true
            while !stop.wait(interval) {
                beat()
            }
            _ = try watch.run("deregistering the worker", stop: stop, persistence: .afterStop(2)) {
                try store.deregister(worker: me.id, now: Date())
            }
        } catch {
            logger.warning("worker housekeeping stopped", metadata: ["error": "\(error)"])
        }
    }

    private func beat() {
        do {
            try store.heartbeat(worker: me.id, now: Date())
            if steadySince == nil { steadySince = Date() }
        } catch {
            steadySince = nil  // the ledger's trouble is logged by the threads that wait for it
            return
        }
        sweep()
        prune()
        if Date().timeIntervalSince(lastCheckpoint) >= Self.checkpointInterval {
            lastCheckpoint = Date()
            do { try store.checkpoint() } catch { logger.debug("checkpoint skipped", metadata: ["error": "\(error)"]) }
        }
    }

    /// Returns the rows of every worker that is gone.
    private func sweep() {
        do {
            let now = Date()
            let steady = steadySince.map { now.timeIntervalSince($0) >= heartbeatTimeout } ?? false
            for worker in try store.liveWorkers() where worker.id != me.id {
                let vanished = worker.host == me.host && !Self.processExists(worker.pid)
                let silent = steady && now.timeIntervalSince(worker.heartbeatAt) > heartbeatTimeout
                guard vanished || silent else { continue }
                let why = vanished ? "its process \(worker.pid) is gone" : "no heartbeat for \(Int(now.timeIntervalSince(worker.heartbeatAt))) s"
                let result = try store.returnOrphans(
                    ofWorker: worker.id, reason: "interrupted: the worker died (\(why)) before recording a result", maxAttempts: maxAttempts,
                    now: now)
                logger.warning(
                    "worker \(worker.id) died (\(why)); its rows are back in the queue",
                    metadata: ["interrupted": "\(result.interrupted)", "returned": "\(result.returned)"])
            }
        } catch {
            logger.debug("could not look for dead workers", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes what `ledger.eventRetention` no longer keeps, once an hour.
    private func prune() {
        let now = Date()
        guard eventRetention > 0, now.timeIntervalSince(lastPrune) >= Self.pruneInterval else { return }
        lastPrune = now
        do {
            let deleted = try store.pruneEvents(before: now.addingTimeInterval(-eventRetention))
            if deleted > 0 { logger.info("pruned \(deleted) ledger events older than the retention") }
        } catch {
            lastPrune = .distantPast
            logger.debug("pruning skipped", metadata: ["error": "\(error)"])
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

import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// The claiming and rendering half of one connection, on its own thread.
///
/// `@unchecked Sendable`: `released`, `error`, `lastClaim` and `lastWaitLog` are written by the
/// preparing thread (the first two before it signals `done`, read by the sending thread only after
/// `waitUntilDone()`).
final class Preparer: @unchecked Sendable {
    private let worker: Worker
    private let handoff: Handoff<Worker.Prepared>
    private let untilEmpty: Bool
    private let context: Worker.Connection
    private let breaker: ConnectionBreaker
    private let done = DispatchSemaphore(value: 0)
    private(set) var released = 0
    private(set) var error: (any Error)?
    /// Rows this connection claimed and has not yet recorded or released.
    private let outstanding = Atomic<Int>(0)
    /// Claims of one connection get strictly increasing times, so their leases order them as sent.
    private var lastClaim = Date.distantPast
    private var lastWaitLog = Date.distantPast
    private var lastWaitText = ""

    init(worker: Worker, handoff: Handoff<Worker.Prepared>, untilEmpty: Bool, context: Worker.Connection, breaker: ConnectionBreaker) {
        self.worker = worker
        self.handoff = handoff
        self.untilEmpty = untilEmpty
        self.context = context
        self.breaker = breaker
    }

    func run() {
        defer {
            handoff.finish()
            done.signal()
        }
        do {
            try fill()
        } catch {
            self.error = error
        }
    }

    func waitUntilDone() { done.wait() }

    /// Called by the sending thread once a claimed row is recorded or released.
    func settled(_ count: Int = 1) { outstanding.subtract(count, ordering: .relaxed) }

    private var stop: StopSignal { context.stop }

    private func fill() throws {
        while !stop.isStopped {
            breaker.waitWhilePaused(stop)
            let now = max(Date(), lastClaim.addingTimeInterval(0.001))
            lastClaim = now
            guard
                let batch = try context.watch.run(
                    "claiming mail", stop: stop, persistence: .untilStopped,
                    {
                        try worker.store.claim(worker.policy, owner: context.owner, now: now)
                    })
            else { return }
            if batch.isEmpty {
                guard
                    let status = try context.watch.run(
                        "reading the queue", stop: stop, persistence: .untilStopped, { try worker.store.queueStatus() })
                else { return }
                if untilEmpty && status.pending == 0 { return }
                let ours = outstanding.load(ordering: .relaxed)
                if untilEmpty && ours < status.pending { explainWait(status) }
                // When the only pending rows are our own in-flight ones, look again soon: they settle quickly.
                let untilDue = ours >= status.pending ? 0.01 : status.nextDue.map { $0.timeIntervalSinceNow } ?? worker.pollInterval
                stop.wait(min(worker.pollInterval, max(0.01, untilDue)))
                continue
            }
            outstanding.add(batch.count, ordering: .relaxed)
            for (index, claimed) in batch.enumerated() {
                if stop.isStopped || breaker.pause != nil || !handoff.put(worker.prepare(claimed)) {
                    // The sender stopped or its connection is paused: hand back what it will not send now.
                    let rest = Array(batch[index...])
                    _ = try context.watch.run("handing back claimed rows", stop: stop, persistence: .afterStop(worker.stopGrace)) {
                        try worker.store.release(rest)
                    }
                    released += rest.count
                    settled(rest.count)
                    break
                }
            }
        }
    }

    /// `--until-empty` says what it is waiting for, when that changes and every 10 s.
    private func explainWait(_ status: QueueStatus) {
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
        worker.logger.info("\(text)", metadata: ["connection": "\(context.owner)"])
    }
}

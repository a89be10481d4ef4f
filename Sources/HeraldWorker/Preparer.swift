import Foundation
import HeraldStore
import Synchronization

/// The claiming and rendering half of one connection, on its own thread.
///
/// `@unchecked Sendable`: `released` and `error` are written by the preparing thread before it
/// signals `done`, and read by the sending thread only after `waitUntilDone()`.
final class Preparer: @unchecked Sendable {
    private let worker: Worker
    private let handoff: Handoff<Worker.Prepared>
    private let untilEmpty: Bool
    private let stop: StopSignal
    private let done = DispatchSemaphore(value: 0)
    private(set) var released = 0
    private(set) var error: (any Error)?
    /// Rows this connection claimed and has not yet recorded or released.
    private let outstanding = Atomic<Int>(0)

    init(worker: Worker, handoff: Handoff<Worker.Prepared>, untilEmpty: Bool, stop: StopSignal) {
        self.worker = worker
        self.handoff = handoff
        self.untilEmpty = untilEmpty
        self.stop = stop
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

    private func fill() throws {
        while !stop.isStopped {
            let batch = try worker.store.claim(worker.policy)
            if batch.isEmpty {
                let status = try worker.store.queueStatus()
                if untilEmpty && status.pending == 0 { return }
                let ours = outstanding.load(ordering: .relaxed)
                // When the only pending rows are our own in-flight ones, look again soon: they settle quickly.
                let untilDue = ours >= status.pending ? 0.01 : status.nextDue.map { $0.timeIntervalSinceNow } ?? worker.pollInterval
                stop.wait(min(worker.pollInterval, max(0.01, untilDue)))
                continue
            }
            outstanding.add(batch.count, ordering: .relaxed)
            for (index, claimed) in batch.enumerated() {
                if stop.isStopped || !handoff.put(worker.prepare(claimed)) {
                    // The sender stopped: hand back what it will never send (the rejected item included).
                    let rest = Array(batch[index...])
                    try worker.store.release(rest)
                    released += rest.count
                    settled(rest.count)
                    return
                }
            }
        }
    }
}

import Foundation

/// The ledger-writing stage of one connection, on its own thread.
///
/// `@unchecked Sendable`: `summary` and `error` are written only by the recording thread before it
/// signals `done`, and read by the sending thread only after `waitUntilDone()`.
final class Recorder: @unchecked Sendable {
    private let worker: Worker
    private let outcomes: Handoff<Worker.Outcome>
    private let preparer: Preparer
    private let done = DispatchSemaphore(value: 0)
    private(set) var summary = WorkerSummary()
    private(set) var error: (any Error)?

    init(worker: Worker, outcomes: Handoff<Worker.Outcome>, preparer: Preparer) {
        self.worker = worker
        self.outcomes = outcomes
        self.preparer = preparer
    }

    func run() {
        defer { done.signal() }
        while let outcome = outcomes.take() {
            do {
                try worker.record(outcome, summary: &summary)
                preparer.settled()
            } catch {
                self.error = error
                _ = outcomes.close()  // the sender stops; unrecorded rows return when their leases end
                return
            }
        }
    }

    func waitUntilDone() { done.wait() }
}

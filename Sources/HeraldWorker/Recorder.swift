import Foundation

/// The ledger-writing stage of one connection, on its own thread.
///
/// `@unchecked Sendable`: `summary` and `error` are written only by the recording thread before it
/// signals `done`, and read by the sending thread only after `waitUntilDone()`.
final class Recorder: @unchecked Sendable {
    private let worker: Worker
    private let outcomes: Handoff<Worker.Outcome>
    private let preparer: Preparer
    private let context: Worker.Connection
    private let done = DispatchSemaphore(value: 0)
    private(set) var summary = WorkerSummary()
    private(set) var error: (any Error)?

    init(worker: Worker, outcomes: Handoff<Worker.Outcome>, preparer: Preparer, context: Worker.Connection) {
        self.worker = worker
        self.outcomes = outcomes
        self.preparer = preparer
        self.context = context
    }

    func run() {
        defer { done.signal() }
        while let outcome = outcomes.take() {
            do {
                try worker.record(outcome, summary: &summary, context: context)
                preparer.settled()
            } catch {
                self.error = error
                _ = outcomes.close()  // the sender stops; unrecorded rows return once this worker is found gone
                return
            }
        }
    }

    func waitUntilDone() { done.wait() }
}

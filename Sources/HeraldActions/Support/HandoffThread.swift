import Foundation
import HeraldCore

/// A second thread for a two-stage pipeline: the caller prepares the next batch while this thread
/// writes the previous one.
///
/// `submit` hands over one piece of work, waiting first until the previous one is done, so at most two
/// batches exist at once: the one being written and the one being filled. Work runs in submission order.
/// The first error ends the stage: `submit` and `finish` throw it from then on.
///
/// ```swift
/// let writer = HandoffThread(name: "import writer")
/// for batch in batches { try writer.submit { try store.insert(batch) } }
/// try writer.finish()
/// ```
final class HandoffThread: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `condition`; a piece of work touches
    // its caller's state only between its handover and the caller's next `submit` or `finish`.
    private let condition = NSCondition()
    private var handed: (() throws -> Void)?
    private var busy = false
    private var closed = false
    private var failure: (any Error)?

    init(name: String) {
        let thread = Thread.named(name) { [self] in
            run()
        }
        thread.start()
    }

    /// Waits for the previous work to finish, then hands `work` to the thread.
    func submit(_ work: @escaping () throws -> Void) throws {
        condition.lock()
        defer { condition.unlock() }
        try waitIdle()
        handed = work
        busy = true
        condition.broadcast()
    }

    /// Waits for the work handed over so far and ends the thread; throws the first error any of it threw.
    /// Calling it again does nothing more.
    func finish() throws {
        condition.lock()
        defer { condition.unlock() }
        defer {
            closed = true
            condition.broadcast()
        }
        try waitIdle()
    }

    private func waitIdle() throws {
        while busy { condition.wait() }
        if let failure { throw failure }
    }

    private func run() {
        condition.lock()
        while true {
            while handed == nil && !closed { condition.wait() }
            guard let work = handed else { break }
            handed = nil
            condition.unlock()
            var thrown: (any Error)?
            do { try work() } catch { thrown = error }
            condition.lock()
            if failure == nil { failure = thrown }
            busy = false
            condition.broadcast()
        }
        condition.unlock()
    }
}

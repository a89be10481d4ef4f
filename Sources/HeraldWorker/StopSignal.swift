import Foundation
import HeraldCore

/// A one-way "please stop" flag that sleeping threads can wait on; waits run on the monotonic clock.
///
/// `@unchecked Sendable`: the only state, `stopped`, is read and written under `condition`'s lock.
public final class StopSignal: @unchecked Sendable {
    private let condition = MonotonicCondition()
    private var stopped = false

    public init() {}

    public var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    public func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Sleeps up to `seconds`, waking early when stopped. Returns true when stopped.
    @discardableResult
    public func wait(_ seconds: TimeInterval) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = MonotonicInstant.now().adding(max(0, seconds))
        while !stopped && condition.wait(until: deadline) {}
        return stopped
    }
}

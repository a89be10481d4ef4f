import Foundation
import HeraldCore
import Synchronization

/// One SMTP connection's circuit breaker: after a connection-level failure (the server down,
/// refusing, timing out) the connection pauses, `base` doubling per consecutive failure up to
/// `cap`, then the next message probes it. Messages are not charged for any of this.
final class ConnectionBreaker: Sendable {
    private struct State {
        var failures = 0
        var firstFailure: Date?
        var pausedUntil: MonotonicInstant?
        var lastReason = ""
    }

    private let state = Mutex(State())
    private let retry: RetryPolicy

    init(base: TimeInterval, cap: TimeInterval) {
        retry = RetryPolicy(base: base, cap: cap)
    }

    /// Opens the breaker after a failure; returns how long the connection pauses.
    func failed(_ reason: String) -> TimeInterval {
        state.withLock { state in
            state.failures += 1
            if state.firstFailure == nil { state.firstFailure = Date() }
            let pause = retry.delay(afterAttempt: state.failures)
            state.pausedUntil = MonotonicInstant.now().adding(pause)
            state.lastReason = reason
            return pause
        }
    }

    /// Closes the breaker after the server answered a message; returns the outage it ended, if any.
    func succeeded() -> (failures: Int, since: Date)? {
        state.withLock { state in
            defer { state = State() }
            guard let since = state.firstFailure else { return nil }
            return (state.failures, since)
        }
    }

    /// When the outage under way began (its first failure), if one is.
    var outageBegan: Date? { state.withLock { $0.firstFailure } }

    /// When the pause ends and why it began, while the connection is paused.
    var pause: (until: MonotonicInstant, reason: String)? {
        state.withLock { state in
            guard let until = state.pausedUntil, until > .now() else { return nil }
            return (until, state.lastReason)
        }
    }

    /// Sleeps until the pause is over (or the worker stops).
    func waitWhilePaused(_ stop: StopSignal) {
        while let pause, !stop.isStopped {
            stop.wait(pause.until.secondsFromNow)
        }
    }
}

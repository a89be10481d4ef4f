import Foundation
import Synchronization

/// Makes an answer that did less work take as long as one that did more.
///
/// The silent path of enumeration protection already does the same durable write as a real send; what is
/// left (a wider row, more indexes, the link) still showed as ~0.3 ms, enough for a median-split classifier to
/// beat chance. So silent answers wait a little: the wait follows, by feedback, the gap between the mean
/// latency of real sends and the mean latency of silent answers including their wait, which also absorbs how
/// much the sleep itself overshoots. The silent latencies keep their own spread and move to the real mean.
final class LatencyMatcher: Sendable {
    private struct State {
        /// Mean latency of real sends, in seconds (exponentially weighted).
        var real: Double?
        /// Mean latency of silent answers, their wait included.
        var silent: Double?
        /// The wait silent answers get now.
        var wait: Double = 0
    }

    /// Weight of the newest latency in the means.
    static let weight = 0.05
    /// The longest a silent answer is held, whatever the means say (a stalled disk must not stall it further).
    static let maxWait = 0.05
    private let state = Mutex(State())

    /// Notes how long a real send took from `start`.
    func record(since start: ContinuousClock.Instant) {
        let took = Self.seconds(ContinuousClock.now - start)
        state.withLock { state in state.real = Self.mean(state.real, took) }
    }

    /// Waits as long as silent answers now wait, then notes how long this one took in all.
    func pad(since start: ContinuousClock.Instant) {
        let wait = state.withLock { $0.wait }
        if wait > 0.000_02 { Thread.sleep(forTimeInterval: wait) }
        let took = Self.seconds(ContinuousClock.now - start)
        state.withLock { state in
            state.silent = Self.mean(state.silent, took)
            guard let real = state.real, let silent = state.silent else { return }
            state.wait = min(Self.maxWait, max(0, state.wait + 0.5 * (real - silent)))
        }
    }

    private static func mean(_ current: Double?, _ sample: Double) -> Double {
        guard let current else { return sample }
        return current + weight * (sample - current)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

import Foundation

/// Exponential backoff with jitter: attempt n waits `base · 2^(n-1)`, capped, scaled by 50–100 %.
public struct RetryPolicy: Sendable {
    public var base: TimeInterval
    public var cap: TimeInterval

    public init(base: TimeInterval, cap: TimeInterval) {
        self.base = base
        self.cap = cap
    }

    /// The delay before the attempt after `attempt` (1-based); `jitter` in 0...1.
    public func delay(afterAttempt attempt: Int, jitter: Double = Double.random(in: 0...1)) -> TimeInterval {
        let exponential = base * pow(2, Double(min(max(attempt - 1, 0), 30)))
        return min(cap, exponential) * (0.5 + 0.5 * jitter)
    }
}

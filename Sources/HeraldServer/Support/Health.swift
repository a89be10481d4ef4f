import Synchronization

/// Whether the process can do its job, as `/health` reports it.
///
/// `herald serve` marks it failed when its worker stops with an error; `/health` then answers 503
/// naming the failure until the server drains and the process exits non-zero. While the embedded
/// worker waits for an unavailable ledger (busy, read-only, full), `/health` answers 503
/// `unavailable` and returns to `ok` by itself once the worker commits again.
public final class Health: Sendable {
    private struct State {
        var failure: String?
        var unavailable: String?
    }

    private let state = Mutex(State())

    public init() {}

    /// Records why the process can no longer do its job; the first failure is kept.
    public func fail(_ reason: String) {
        state.withLock { current in
            if current.failure == nil { current.failure = reason }
        }
    }

    /// Records a passing condition (`reason`), or its end (`nil`).
    public func setUnavailable(_ reason: String?) {
        state.withLock { $0.unavailable = reason }
    }

    /// The recorded failure, or nil while healthy.
    public var failureReason: String? { state.withLock { $0.failure } }

    /// Why the process is waiting right now, or nil.
    public var unavailableReason: String? { state.withLock { $0.unavailable } }
}

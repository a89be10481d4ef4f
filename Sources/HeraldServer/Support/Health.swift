import Synchronization

/// Whether the process can do its job: the embedded worker's fate, as `/health` reports it.
///
/// `herald serve` marks it failed when its worker stops with an error; `/health` then answers 503
/// naming the failure until the server drains and the process exits non-zero.
public final class Health: Sendable {
    private let failure = Mutex<String?>(nil)

    public init() {}

    /// Records why the process can no longer do its job; the first failure is kept.
    public func fail(_ reason: String) {
        failure.withLock { current in
            if current == nil { current = reason }
        }
    }

    /// The recorded failure, or nil while healthy.
    public var failureReason: String? { failure.withLock { $0 } }
}

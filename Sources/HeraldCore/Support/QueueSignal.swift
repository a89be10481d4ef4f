import Synchronization

/// Tells the workers of this process that mail was queued, so an idle one claims at once instead of at its next
/// poll (`worker.pollInterval`): `herald serve`'s embedded worker sends an API request's email within
/// milliseconds while idle polling stays slow.
///
/// ```swift
/// let signal = QueueSignal()
/// let token = signal.observe { desk.queued() }
/// signal.signal()  // after a commit that queued mail
/// signal.remove(token)
/// ```
public final class QueueSignal: Sendable {
    private let observers = Mutex<(next: Int, all: [Int: @Sendable () -> Void])>((0, [:]))

    public init() {}

    /// Calls `body` on every signal until removed; returns the token `remove` takes.
    public func observe(_ body: @escaping @Sendable () -> Void) -> Int {
        observers.withLock { state in
            state.next += 1
            state.all[state.next] = body
            return state.next
        }
    }

    public func remove(_ token: Int) {
        _ = observers.withLock { $0.all.removeValue(forKey: token) }
    }

    /// Mail was queued (call after the commit).
    public func signal() {
        let all = observers.withLock { Array($0.all.values) }
        for body in all { body() }
    }
}

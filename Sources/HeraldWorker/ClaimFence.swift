import Foundation
import HeraldCore
import Synchronization

/// Whether this worker may still send the rows it holds, as its heartbeats last told it.
///
/// Another host's worker gives this one up for dead when the ledger has not seen its heartbeat for
/// `worker.heartbeatTimeout`, and hands its rows to the queue. A worker that was only paused (a stopped process, a
/// frozen VM, a partition) must not then send them too. So the send loop starts a send only while the last heartbeat
/// that reached the ledger is younger than half the timeout, by the monotonic clock; and when a heartbeat finds this
/// worker given up (`WorkerRegistry.heartbeat` answers false), the fence is revoked: the send loop lets go of every
/// row it holds, unsent, and only then does the worker rejoin and claim again.
final class ClaimFence: Sendable {
    private struct State {
        var confirmed: MonotonicInstant
        var revoked = false
        var letGo = false
    }

    private let state: Mutex<State>
    /// How long after the last confirmed heartbeat sends may still start.
    let horizon: TimeInterval

    init(heartbeatTimeout: TimeInterval) {
        horizon = heartbeatTimeout / 2
        state = Mutex(State(confirmed: .now()))
    }

    /// A heartbeat reached the ledger, and this worker was still counted alive.
    func confirm() { state.withLock { $0.confirmed = .now() } }

    /// A heartbeat found this worker given up for dead: its rows are another's now.
    func revoke() {
        state.withLock { state in
            if !state.revoked { (state.revoked, state.letGo) = (true, false) }
        }
    }

    /// Whether a send may start now.
    var maySend: Bool {
        state.withLock { !$0.revoked && MonotonicInstant.now().seconds(since: $0.confirmed) < horizon }
    }

    /// Whether the fence was revoked and the send loop has not yet let go of its rows.
    var mustLetGo: Bool { state.withLock { $0.revoked && !$0.letGo } }

    var isRevoked: Bool { state.withLock { $0.revoked } }

    /// The send loop let go of every row it held.
    func letGo() { state.withLock { if $0.revoked { $0.letGo = true } } }

    /// True once (and the fence lifted) when the send loop has let go after a revocation: the worker may rejoin.
    func mayRejoin() -> Bool {
        state.withLock { state in
            guard state.revoked && state.letGo else { return false }
            state = State(confirmed: .now())
            return true
        }
    }
}

import Foundation
import HeraldCore
import Logging
import Synchronization

/// Whether the process can do its job, as `/health` reports it.
///
/// `herald serve` marks it failed when its worker stops with an error; `/health` then answers 503
/// naming the failure until the server drains and the process exits non-zero. While the embedded
/// worker waits for an unavailable ledger (busy, read-only, full), or requests find it so (with or without a
/// worker), `/health` answers 503 `unavailable` and returns to `ok` by itself once the ledger commits again: the
/// worker's next commit, or a probe write `/health` makes at most once a second while requests found it failing.
public final class Health: Sendable {
    private struct State {
        var failure: String?
        var unavailable: String?
        /// Requests found the ledger unavailable: why, and since when.
        var ledger: (reason: String, since: Date)?
        var lastProbe = MonotonicInstant.distantPast
        /// The process could not open a file at the last look.
        var descriptorsExhausted = false
        /// Why the SMTP relay fails the embedded worker, while it does.
        var relay: String?
    }

    private let state = Mutex(State())
    static let probeInterval: TimeInterval = 1

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

    /// A request found the ledger unavailable. True when this begins an episode (the caller logs it, once).
    public func ledgerUnavailable(_ reason: String) -> Bool {
        state.withLock { state in
            guard state.ledger == nil else { return false }
            state.ledger = (reason, Date())
            return true
        }
    }

    /// The ledger committed a write: ends the episode requests saw; how long it lasted, if one was open.
    public func ledgerAvailable() -> TimeInterval? {
        state.withLock { state in
            guard let episode = state.ledger else { return nil }
            state.ledger = nil
            return Date().timeIntervalSince(episode.since)
        }
    }

    /// Whether `/health` should try a write now: requests found the ledger unavailable, and the last try was at
    /// least `probeInterval` ago. Claims the try.
    func shouldProbe() -> Bool {
        state.withLock { state in
            let now = MonotonicInstant.now()
            guard state.ledger != nil, now.seconds(since: state.lastProbe) >= Self.probeInterval else { return false }
            state.lastProbe = now
            return true
        }
    }

    /// Looks whether the process can open one more file, logging when that changes (once each way): out of
    /// descriptors, connections are refused and the ledger cannot be opened, whatever else they say.
    func checkDescriptors(logger: Logger) {
        let exhausted = FileDescriptors.exhausted()
        let changed = state.withLock { state -> Bool in
            defer { state.descriptorsExhausted = exhausted }
            return state.descriptorsExhausted != exhausted
        }
        guard changed else { return }
        if exhausted {
            logger.error("\(FileDescriptors.exhaustion)")
        } else {
            logger.info("file descriptors available again")
        }
    }

    /// Records why the SMTP relay fails the worker's connections (`nil` once it answers again). Mail waits in the ledger
    /// meanwhile, so this is reported beside the status, never as a failure of the process.
    public func setRelayProblem(_ reason: String?) {
        state.withLock { $0.relay = reason }
    }

    /// Why the SMTP relay fails, while it does.
    public var relayProblem: String? { state.withLock { $0.relay } }

    /// The recorded failure, or nil while healthy.
    public var failureReason: String? { state.withLock { $0.failure } }

    /// Why the process is waiting right now, or nil.
    public var unavailableReason: String? {
        state.withLock { state in
            state.descriptorsExhausted ? FileDescriptors.exhaustion : state.unavailable ?? state.ledger.map { "ledger: \($0.reason)" }
        }
    }
}

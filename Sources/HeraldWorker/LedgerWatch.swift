import Foundation
import HeraldCore
import Logging
import Synchronization

/// Waits out an unavailable ledger for the worker's threads: an operation failing with
/// `UNAVAILABLE` (busy, locked, read-only, full disk, I/O) is retried with backoff until it
/// commits. The first failure and each escalation (1 s, 5 s, 15 s, 60 s, then every 5 minutes)
/// are logged; so is the recovery. While any thread waits, `onChange` reports the reason, and nil
/// once none does (`herald serve` turns `/health` to 503 meanwhile).
///
/// Every other error passes through: only a configuration or program error stops the worker.
final class LedgerWatch: Sendable {
    private struct State {
        var waiting = 0
        var reason: String?
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let onChange: @Sendable (String?) -> Void
    static let escalations: [TimeInterval] = [1, 5, 15, 60]

    init(logger: Logger, onChange: @escaping @Sendable (String?) -> Void) {
        self.logger = logger
        self.onChange = onChange
    }

    /// How long to keep trying once the worker has been told to stop.
    enum Persistence {
        /// Give up as soon as the worker stops (claims, status): nothing is lost by not doing it.
        case untilStopped
        /// Keep trying this long after the stop (recording a send that happened), then give up.
        case afterStop(TimeInterval)
    }

    /// Runs `body` until it succeeds; nil when the worker stopped first (see `Persistence`).
    func run<T>(_ what: String, stop: StopSignal, persistence: Persistence, _ body: () throws -> T) throws -> T? {
        var failures = 0
        var started: Date?
        var stoppedAt: Date?
        var nextLog = 0
        defer { if started != nil { leave() } }
        while true {
            do {
                let value = try body()
                if let started {
                    let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
                    logger.info("ledger available again after \(seconds) s; \(what) resumed", metadata: ["seconds": "\(seconds)"])
                }
                return value
            } catch let error as HeraldError where error.code == .unavailable {
                failures += 1
                let now = Date()
                if started == nil {
                    started = now
                    enter(error.detail)
                    logger.warning("ledger unavailable; \(what) waits and retries", metadata: ["error": "\(error.detail)"])
                } else if let began = started, now.timeIntervalSince(began) >= threshold(nextLog) {
                    let seconds = String(format: "%.0f", now.timeIntervalSince(began))
                    logger.warning(
                        "ledger still unavailable after \(seconds) s; \(what) keeps retrying",
                        metadata: ["error": "\(error.detail)", "seconds": "\(seconds)"])
                    nextLog += 1
                }
                if stop.isStopped {
                    switch persistence {
                    case .untilStopped:
                        return nil
                    case .afterStop(let grace):
                        let since = stoppedAt ?? now
                        stoppedAt = since
                        if now.timeIntervalSince(since) >= grace {
                            logger.error("ledger unavailable at shutdown; giving up on \(what)", metadata: ["error": "\(error.detail)"])
                            throw error
                        }
                    }
                }
                let delay = min(5, 0.05 * pow(2, Double(min(failures - 1, 10))))
                stop.wait(delay)
                if stop.isStopped, case .afterStop = persistence { Thread.sleep(forTimeInterval: min(delay, 0.2)) }
            }
        }
    }

    private func threshold(_ index: Int) -> TimeInterval {
        index < Self.escalations.count ? Self.escalations[index] : 60 + 300 * Double(index - Self.escalations.count + 1)
    }

    private func enter(_ reason: String) {
        let changed = state.withLock { state -> String? in
            state.waiting += 1
            guard state.reason == nil else { return nil }
            state.reason = reason
            return reason
        }
        if let changed { onChange("ledger: \(changed)") }
    }

    private func leave() {
        let cleared = state.withLock { state -> Bool in
            state.waiting -= 1
            guard state.waiting == 0 else { return false }
            state.reason = nil
            return true
        }
        if cleared { onChange(nil) }
    }
}

import Foundation
import HeraldCore
import HeraldStore
import Logging

/// Requests refused by an abuse limit: each is counted (`herald_throttled_requests_total`) and tallied for the
/// ledger's `abuse_counts`, written at most once a second. One is shared by every service that applies a limit.
public final class RefusalCounter: Sendable {
    let store: any HeraldStore
    let logger: Logger
    /// Refused requests on their way to the ledger's `abuse_counts`.
    let tally = AbuseTally()

    init(store: any HeraldStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Runs a store call that may hit a limit; a refusal is counted and answered with its error.
    func limited<T>(now: Date, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let refusal as LimitRefusal {
            throw refused(refusal, now: now)
        }
    }

    /// Writes the refusals counted since the last write; `herald serve` calls it every second and at shutdown,
    /// so `herald throttles` is never more than a second behind.
    public func flushAbuseCounts(now: Date = Date()) {
        let counts = tally.drain(now: now)
        guard !counts.isEmpty else { return }
        do {
            try store.addAbuseCounts(counts)
        } catch {
            logger.warning("could not record refused requests", metadata: ["error": "\(error)"])
        }
    }

    /// `limited(now:_:)` for a store call that suspends; the refusal is counted on a blocking thread (its tally
    /// is written to the ledger at most once a second).
    func limited<T>(now: Date, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let refusal as LimitRefusal {
            throw try await offload { self.refused(refusal, now: now) }
        }
    }

    /// Counts a refusal for the ledger (written at most once a second) and returns the error to answer with.
    func refused(_ refusal: LimitRefusal, now: Date) -> HeraldError {
        ActionMetrics.throttled(limit: refusal.counter)
        if let counts = tally.note(counter: refusal.counter, key: refusal.key, now: now) {
            do {
                try store.addAbuseCounts(counts)
            } catch {
                logger.warning("could not record refused requests", metadata: ["error": "\(error)"])
            }
        }
        return refusal.error
    }
}

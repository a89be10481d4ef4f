import Foundation
import HeraldStore
import Synchronization

/// Refused requests counted in memory and written to the ledger's `abuse_counts` at most once a second,
/// so a flood of refusals costs one small write a second, not one per request.
final class AbuseTally: Sendable {
    private struct Key: Hashable {
        let counter: String
        let key: String
        let hour: Int64
    }

    private struct State {
        var counts: [Key: Int] = [:]
        var writtenAt = Date.distantPast
    }

    /// Past this many distinct keys in one second, further keys are counted under `*`.
    static let maxKeys = 10_000
    private let state = Mutex(State())

    /// Counts one refusal; returns what to write when a second has passed since the last write (else nil).
    func note(counter: String, key: String, now: Date) -> [AbuseCount]? {
        state.withLock { state in
            let hour = Int64(now.timeIntervalSince1970) / 3600
            var entry = Key(counter: counter, key: key, hour: hour)
            if state.counts[entry] == nil, state.counts.count >= Self.maxKeys { entry = Key(counter: counter, key: "*", hour: hour) }
            state.counts[entry, default: 0] += 1
            guard now.timeIntervalSince(state.writtenAt) >= 1 else { return nil }
            state.writtenAt = now
            return Self.take(&state)
        }
    }

    /// Everything counted and not yet written (`herald serve` writes it every second and at shutdown).
    func drain(now: Date) -> [AbuseCount] {
        state.withLock { state in
            state.writtenAt = now
            return Self.take(&state)
        }
    }

    private static func take(_ state: inout State) -> [AbuseCount] {
        defer { state.counts = [:] }
        return state.counts.map { key, count in
            AbuseCount(counter: key.counter, key: key.key, hour: Date(timeIntervalSince1970: Double(key.hour) * 3600), count: count)
        }
    }
}

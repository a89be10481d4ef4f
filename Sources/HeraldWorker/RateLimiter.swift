import Foundation
import Synchronization

/// A process-wide send-rate cap shared by every connection: each send takes the next slot `1/rate`
/// seconds after the previous one and waits for it (a token bucket holding one token). The send loop
/// waits in `acquire` before starting a send, which holds every connection, as the shared cap would.
final class RateLimiter: Sendable {
    private let interval: TimeInterval
    private let nextSlot = Mutex<Date>(.distantPast)

    init?(perSecond rate: Double) {
        guard rate > 0 else { return nil }
        interval = 1 / rate
    }

    /// Blocks the calling (send loop) thread until its slot; never call it on the cooperative pool.
    func acquire() {
        let slot = nextSlot.withLock { next -> Date in
            let slot = max(next, Date())
            next = slot.addingTimeInterval(interval)
            return slot
        }
        let wait = slot.timeIntervalSinceNow
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }
}

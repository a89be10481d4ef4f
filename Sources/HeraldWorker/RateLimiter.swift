import Foundation
import HeraldStore
import Synchronization

/// A send-rate cap shared by every connection: each send takes the next slot `1/rate` seconds after the
/// previous one and waits for it (a token bucket holding one token). The send loop waits in `acquire` before
/// starting a send, which holds every connection, as the shared cap would.
///
/// With a ledger that keeps rate slots (`SharedRateLimits`, PostgreSQL), the cap holds across every process on
/// every host: this process reserves its slots in blocks of a tenth of a second's worth from the ledger and hands
/// them out in order. A block it cannot use (it stops, or the queue empties) is lost, so the processes together
/// may send slower than the cap, never faster. While the ledger cannot be reached, slots are paced locally.
final class RateLimiter: Sendable {
    private let interval: TimeInterval
    private let shared: (any SharedRateLimits)?
    private let block: Int
    private let state = Mutex<(next: Date, reserved: Int)>((.distantPast, 0))
    static let sharedKey = "worker.maxRate"

    init?(perSecond rate: Double, shared: (any SharedRateLimits)? = nil) {
        guard rate > 0 else { return nil }
        interval = 1 / rate
        self.shared = shared
        block = max(1, Int(rate / 10))
    }

    /// Blocks the calling (send loop) thread until its slot; never call it on the cooperative pool.
    func acquire() {
        let slot = state.withLock { state -> Date in
            if let shared, state.reserved == 0 || state.next < Date() {
                if let start = try? shared.reserveSendSlots(block, interval: interval, key: Self.sharedKey, now: Date()) {
                    state = (start, block)
                } else {
                    state.reserved = 0
                }
            }
            let slot = shared != nil && state.reserved > 0 ? state.next : max(state.next, Date())
            state.next = slot.addingTimeInterval(interval)
            state.reserved = max(0, state.reserved - 1)
            return slot
        }
        let wait = slot.timeIntervalSinceNow
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }
}

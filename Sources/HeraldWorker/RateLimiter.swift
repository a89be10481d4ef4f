import Foundation
import HeraldCore
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
    private let state = Mutex<(next: MonotonicInstant, reserved: Int)>((.distantPast, 0))
    static let sharedKey = "worker.maxRate"
    /// The longest a shared slot is waited for: many processes share the cap, but not a wait of minutes.
    static let maxAhead: TimeInterval = 10

    init?(perSecond rate: Double, shared: (any SharedRateLimits)? = nil) {
        guard rate > 0 else { return nil }
        interval = 1 / rate
        self.shared = shared
        block = max(1, Int(rate / 10))
    }

    /// Blocks the calling (send loop) thread until its slot; never call it on the cooperative pool.
    ///
    /// Slots are paced on the monotonic clock; a shared block's start, a wall-clock time in the ledger, is placed
    /// on it by its distance from now (the ledger's clock decides it), and never more than `maxAhead` away.
    func acquire() {
        let slot = state.withLock { state -> MonotonicInstant in
            let now = MonotonicInstant.now()
            if let shared, state.reserved == 0 || state.next < now {
                let wall = Date()
                if let start = try? shared.reserveSendSlots(block, interval: interval, key: Self.sharedKey, now: wall) {
                    let ahead = min(max(0, start.timeIntervalSince(wall)), Self.maxAhead)
                    state = (now.adding(ahead), block)
                } else {
                    state.reserved = 0
                }
            }
            let slot = shared != nil && state.reserved > 0 ? state.next : max(state.next, now)
            state.next = slot.adding(interval)
            state.reserved = max(0, state.reserved - 1)
            return slot
        }
        let wait = slot.secondsFromNow
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
    }
}

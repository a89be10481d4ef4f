import Foundation
import HeraldCore
import Testing

/// Waits inside a process run on the monotonic clock, which no step of the wall clock moves.
@Suite struct MonotonicTests {
    @Test func instantsAddSubtractAndStayInRange() {
        let now = MonotonicInstant.now()
        #expect(now.adding(1.5).seconds(since: now) == 1.5)
        #expect(now.adding(-0.25).seconds(since: now) == -0.25)
        #expect(now.adding(.infinity) == .distantFuture)
        #expect(MonotonicInstant.distantPast.adding(-10) == .distantPast)
        #expect(MonotonicInstant.distantFuture.adding(10) == .distantFuture)
        #expect(MonotonicInstant.now() >= now)
    }

    @Test func aTimedWaitEndsOnTimeAndASignalEndsItEarly() {
        let condition = MonotonicCondition()
        let started = MonotonicInstant.now()
        let signalled = condition.withLock { condition.wait(seconds: 0.1) }
        let waited = MonotonicInstant.now().seconds(since: started)
        #expect(!signalled && waited >= 0.1 && waited < 1, "waited \(waited) s")

        let woken = DispatchSemaphore(value: 0)
        Thread {
            let early = condition.withLock { condition.wait(seconds: 10) }
            if early { woken.signal() }
        }.start()
        Thread.sleep(forTimeInterval: 0.1)
        condition.withLock { condition.broadcast() }
        #expect(woken.wait(timeout: .now() + 5) == .success, "a broadcast ends the wait")
    }
}

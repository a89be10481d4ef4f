import Foundation
import Testing

@testable import HeraldWorker

/// A worker sends the rows it holds only while its heartbeats say they are still its own.
@Suite struct ClaimFenceTests {
    @Test func sendsStopOnceTheLastConfirmedHeartbeatIsHalfTheTimeoutOld() {
        let fence = ClaimFence(heartbeatTimeout: 0.2)
        #expect(fence.maySend)
        Thread.sleep(forTimeInterval: 0.15)
        #expect(!fence.maySend, "a worker paused or cut off for half the timeout must not send before a heartbeat confirms it")
        fence.confirm()
        #expect(fence.maySend)
    }

    @Test func aRevokedFenceLiftsOnlyAfterTheSendLoopLetGo() {
        let fence = ClaimFence(heartbeatTimeout: 30)
        fence.revoke()
        #expect(!fence.maySend && fence.mustLetGo)
        #expect(!fence.mayRejoin(), "no rejoining while the send loop still holds rows")
        fence.letGo()
        #expect(!fence.mustLetGo)
        #expect(fence.mayRejoin())
        #expect(fence.maySend && !fence.isRevoked)
        #expect(!fence.mayRejoin(), "once")
    }
}

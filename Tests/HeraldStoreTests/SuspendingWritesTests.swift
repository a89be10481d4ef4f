import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The durable writes a request makes from Swift's cooperative pool (`enqueue` and `recordSuppressed`, `async`) keep
/// the blocking calls' rules: durable when they return, throttled in the same transaction.
@Suite struct SuspendingWritesTests {
    let scratch = ScratchDirectory()
    let throttle = SendThrottle(cooldown: 60, dailyCap: 10)

    @Test(arguments: StoreKind.allCases)
    func aSuspendingEnqueueQueuesTheRowAndItsThrottleRefusesTheNextWithinTheCooldown(kind: StoreKind) async throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let request = try Fixture.request(.resetPassword)
        let id = try await store.enqueue(request, messageDomain: Fixture.messageDomain, throttle: throttle, quota: nil, now: now)
        #expect(try store.messages(state: .queued, email: nil, limit: nil).map(\.id) == [id])
        await #expect(throws: LimitRefusal.self) {
            _ = try await store.enqueue(
                request, messageDomain: Fixture.messageDomain, throttle: throttle, quota: nil, now: now.addingTimeInterval(1))
        }
        // Another store on the same ledger (another process) sees the one row.
        let again = try kind.makeStore(in: scratch)
        #expect(try again.messages(state: nil, email: nil, limit: nil).map(\.id) == [id])
    }

    @Test(arguments: StoreKind.allCases)
    func aSuspendingSuppressedRecordIsThrottledAsASendIsAndQueuesNothing(kind: StoreKind) async throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let request = try Fixture.request(.resetPassword)
        try await store.recordSuppressed(request, reason: .recipientSuppressed, throttle: throttle, quota: nil, now: now)
        await #expect(throws: LimitRefusal.self) {
            try await store.recordSuppressed(
                request, reason: .recipientSuppressed, throttle: throttle, quota: nil, now: now.addingTimeInterval(1))
        }
        #expect(try store.messages(state: nil, email: nil, limit: nil).isEmpty)
    }
}

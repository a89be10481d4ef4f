import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// An operator's second chances (retry) and their reverse (cancel).
@Suite struct RequeueStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func retryRequeuesFailedRowsWithAFreshBudgetAndANewCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let failed = try store.enqueue(Fixture.request(.resetPassword, "a@example.com"), messageDomain: Fixture.messageDomain)
        let sent = try store.enqueue(Fixture.request(.resetPassword, "b@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy, now: now.addingTimeInterval(1))
        try store.record(claimed.first { $0.message.id == failed }!, Fixture.failed(at: now), policy: policy)
        try store.record(claimed.first { $0.message.id == sent }!, Fixture.sent(at: now), policy: policy)
        let oldCode = claimed.first { $0.message.id == failed }!.code

        let filter = RequeueFilter(states: [.failed, .dead])
        #expect(try store.retry(filter, actor: "test", dryRun: true, now: now) == [failed])
        #expect(try store.messages().first { $0.id == failed }?.state == .failed)
        #expect(try store.retry(filter, actor: "test", dryRun: false, now: now.addingTimeInterval(2)) == [failed])
        let row = try #require(try store.messages().first { $0.id == failed })
        #expect((row.state, row.attempts, row.lastReply) == (.queued, 0, "retried by test"))
        let again = try store.claim(policy, now: now.addingTimeInterval(3))
        #expect(again.map(\.message.id) == [failed])
        #expect(again[0].code.plaintext != oldCode.plaintext)
        let oldRecord = try #require(try store.code(oldCode.plaintext))
        #expect(oldRecord.supersededAt != nil)
        #expect(try store.retry(filter, actor: "test", dryRun: false, now: now).isEmpty, "nothing failed any more")
    }

    @Test(arguments: StoreKind.allCases)
    func cancelTakesQueuedRowsOfTheFilterOnly(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("news", now: now, in: store)
        _ = try Fixture.add(["x@example.com", "y@example.com"], to: campaign, now: now, in: store)
        let single = try store.enqueue(Fixture.request(.resetPassword, "x@example.com"), messageDomain: Fixture.messageDomain)
        let filter = RequeueFilter(states: [.queued, .deferred], campaign: campaign.id)
        let cancelled = try store.cancel(filter, actor: "test", dryRun: false, now: now)
        #expect(cancelled.count == 2 && !cancelled.contains(single))
        let rows = try store.messages()
        #expect(rows.filter { $0.state == .cancelled }.count == 2)
        #expect(rows.first { $0.id == single }?.state == .queued)
        let byAddress = RequeueFilter(states: [.queued], email: try EmailAddress("x@example.com"))
        #expect(try store.cancel(byAddress, actor: "test", dryRun: true, now: now) == [single])
        // Retrying the cancelled campaign's rows is refused while the campaign is cancelled.
        _ = try store.cancel(campaign: campaign.id, now: now)
        #expect(try store.retry(RequeueFilter(states: [.cancelled]), actor: "test", dryRun: true, now: now).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func cancelNarrowsByActionAndQueueTime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let earlier = now.addingTimeInterval(-7200)
        let domain = Fixture.messageDomain
        let old = try store.enqueue(Fixture.request(.resetPassword, "a@example.com"), messageDomain: domain, throttle: nil, now: earlier)
        let oldOther = try store.enqueue(Fixture.request(.verifyEmail, "b@example.com"), messageDomain: domain, throttle: nil, now: earlier)
        let recent = try store.enqueue(Fixture.request(.resetPassword, "c@example.com"), messageDomain: domain, throttle: nil, now: now)
        let filter = RequeueFilter(states: [.queued], until: now.addingTimeInterval(-3600), kind: .resetPassword)
        #expect(filter.isNarrowed)
        #expect(try store.cancel(filter, actor: "test", dryRun: true, now: now) == [old])
        #expect(try store.cancel(filter, actor: "test", dryRun: false, now: now) == [old])
        let states = try store.messages().reduce(into: [Int64: OutboxState]()) { $0[$1.id] = $1.state }
        #expect(states[old] == .cancelled && states[oldOther] == .queued && states[recent] == .queued)
    }
}

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
        #expect(try store.retry(filter, actor: "test", dryRun: true, now: now).ids == [failed])
        #expect(try store.messages().first { $0.id == failed }?.state == .failed)
        #expect(try store.retry(filter, actor: "test", dryRun: false, now: now.addingTimeInterval(2)).ids == [failed])
        let row = try #require(try store.messages().first { $0.id == failed })
        #expect((row.state, row.attempts, row.lastReply) == (.queued, 0, "retried by test"))
        let again = try store.claim(policy, now: now.addingTimeInterval(3))
        #expect(again.map(\.message.id) == [failed])
        #expect(again[0].code.plaintext != oldCode.plaintext)
        let oldRecord = try #require(try store.code(oldCode.plaintext))
        #expect(oldRecord.supersededAt != nil)
        #expect(try store.retry(filter, actor: "test", dryRun: false, now: now).count == 0, "nothing failed any more")
    }

    @Test(arguments: StoreKind.allCases)
    func cancelTakesQueuedRowsOfTheFilterOnly(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("news", now: now, in: store)
        _ = try Fixture.add(["x@example.com", "y@example.com"], to: campaign, now: now, in: store)
        let single = try store.enqueue(Fixture.request(.resetPassword, "x@example.com"), messageDomain: Fixture.messageDomain)
        let filter = RequeueFilter(states: [.queued, .deferred], campaign: campaign.id)
        let cancelled = try store.cancel(filter, actor: "test", dryRun: false, now: now)
        #expect(cancelled.count == 2 && cancelled.ids.count == 2 && !cancelled.ids.contains(single))
        let rows = try store.messages()
        #expect(rows.filter { $0.state == .cancelled }.count == 2)
        #expect(rows.first { $0.id == single }?.state == .queued)
        let byAddress = RequeueFilter(states: [.queued], email: try EmailAddress("x@example.com"))
        #expect(try store.cancel(byAddress, actor: "test", dryRun: true, now: now).ids == [single])
        // Retrying the cancelled campaign's rows is refused while the campaign is cancelled.
        _ = try store.cancel(campaign: campaign.id, now: now)
        #expect(try store.retry(RequeueFilter(states: [.cancelled]), actor: "test", dryRun: true, now: now).count == 0)
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
        #expect(try store.cancel(filter, actor: "test", dryRun: true, now: now).ids == [old])
        #expect(try store.cancel(filter, actor: "test", dryRun: false, now: now).ids == [old])
        let states = try store.messages().reduce(into: [Int64: OutboxState]()) { $0[$1.id] = $1.state }
        #expect(states[old] == .cancelled && states[oldOther] == .queued && states[recent] == .queued)
    }

    /// A campaign-wide change reads and changes its rows a batch at a time and answers with a count and the first
    /// ids, not every id: a million-row campaign never sits in memory.
    @Test(arguments: StoreKind.allCases)
    func aChangeOfMoreRowsThanABatchChangesEveryRowAndListsOnlyTheFirst(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("big", now: now, in: store)
        let total = RequeueMatch.batch + 500
        _ = try Fixture.add((0..<total).map { "r\($0)@example.com" }, to: campaign, now: now, in: store)
        let ids = try store.messages().map(\.id).sorted()
        #expect(ids.count == total)
        let first = Array(ids.prefix(RequeueMatch.listedIDs))

        let queued = RequeueFilter(states: [.queued], campaign: campaign.id)
        #expect(try store.cancel(queued, actor: "test", dryRun: true, now: now) == RequeueMatch(count: total, ids: first))
        #expect(try store.messages().allSatisfy { $0.state == .queued }, "a dry run changes nothing")
        #expect(try store.cancel(queued, actor: "test", dryRun: false, now: now) == RequeueMatch(count: total, ids: first))
        #expect(try store.messages().allSatisfy { $0.state == .cancelled })

        let cancelled = RequeueFilter(states: [.cancelled], campaign: campaign.id)
        let later = now.addingTimeInterval(1)
        #expect(try store.retry(cancelled, actor: "test", dryRun: false, now: later) == RequeueMatch(count: total, ids: first))
        #expect(try store.messages().allSatisfy { $0.state == .queued && $0.lastReply == "retried by test" })
        #expect(try store.retry(cancelled, actor: "test", dryRun: false, now: later) == RequeueMatch(count: 0, ids: []))
    }
}

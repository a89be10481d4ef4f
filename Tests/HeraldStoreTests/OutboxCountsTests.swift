import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The counts `/metrics` shows as queue depth and campaign progress.
@Suite struct OutboxCountsTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func outboxCountsGroupRowsByStateActionAndCampaign(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        #expect(try store.outboxCounts().isEmpty)
        let campaign = try Fixture.campaign("welcome", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com", "c@example.com"], to: campaign, now: now, in: store)
        let policy = Fixture.policy { $0.worker.batchSize = 1 }
        let claimed = try store.claim(policy, now: now)
        try store.record(claimed[0], Fixture.sent(at: now), policy: policy)
        _ = try store.enqueue(Fixture.request(.resetPassword, "ada@example.com"), messageDomain: Fixture.messageDomain)
        _ = try store.enqueue(Fixture.request(.resetPassword, "bob@example.com"), messageDomain: Fixture.messageDomain)

        let counts = Set(try store.outboxCounts())
        #expect(
            counts == [
                OutboxCount(state: .sent, kind: campaign.kind, campaignID: campaign.id, count: 1),
                OutboxCount(state: .queued, kind: campaign.kind, campaignID: campaign.id, count: 2),
                OutboxCount(state: .queued, kind: .resetPassword, campaignID: nil, count: 2),
            ])
    }
}

import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The campaign report and the audit, computed from what the ledger recorded.
@Suite struct LedgerQueriesTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    /// A campaign of three: one sent, clicked and redeemed 90 s later, one failed, one still queued.
    func ledgerWithACampaign(_ store: any HeraldStore) throws -> (campaign: Campaign, redeemed: Int64, failed: Int64) {
        let campaign = try Fixture.campaign("welcome", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com", "c@example.com"], to: campaign, now: now, in: store)
        let policy = Fixture.policy { $0.worker.batchSize = 2 }
        let claimed = try store.claim(policy, now: now)
        try store.record(claimed[0], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[1], Fixture.failed(at: now), policy: policy)
        let code = try #require(try store.code(claimed[0].code.plaintext))
        try store.recordLinkEvent(codeID: code.id, kind: .click, visitor: Fixture.visitor, detail: nil, now: now.addingTimeInterval(60))
        _ = try store.consume(claimed[0].code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: now.addingTimeInterval(90))
        return (campaign, claimed[0].message.id, claimed[1].message.id)
    }

    @Test(arguments: StoreKind.allCases)
    func reportCountsWhatTheLedgerRecorded(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let (campaign, _, _) = try ledgerWithACampaign(store)
        let report = try store.report(campaign: campaign.id, now: now.addingTimeInterval(120))
        #expect(report.status == .active)
        #expect(report.counts == [.sent: 1, .failed: 1, .queued: 1])
        #expect(report.total == 3)
        #expect(report.replyCodes == ["250": 1, "550": 1])
        #expect(report.sent == 1)
        #expect(report.clicked == 1)
        #expect(report.redeemed == 1)
        #expect(report.timeToRedeem?.p50 == 90)
        #expect(report.redemptionRate == 1)
        #expect(report.funnel.map(\.sent).reduce(0, +) == 1)
        #expect(report.funnel.map(\.redeemed).reduce(0, +) == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func auditListsEachLinkWithWhatBecameOfIt(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let (campaign, redeemed, failed) = try ledgerWithACampaign(store)
        func audit(_ change: (inout AuditFilter) throws -> Void = { _ in }) throws -> [AuditRow] {
            var filter = AuditFilter()
            try change(&filter)
            var rows: [AuditRow] = []
            try store.audit(filter, now: now.addingTimeInterval(120)) { rows.append($0) }
            return rows
        }
        let rows = try audit { $0.campaign = campaign.id }
        #expect(rows.count == 3)
        let first = try #require(rows.first)
        #expect(first.id == redeemed)
        #expect(first.state == "sent")
        #expect(first.smtpReply == "250 2.0.0 Ok: queued")
        #expect(first.firstClickAt?.milliseconds == now.milliseconds + 60_000)
        #expect(first.redeemedAt?.milliseconds == now.milliseconds + 90_000)
        #expect(first.redeemedIP == Fixture.visitor.ip)
        #expect(rows[1].id == failed)
        #expect(rows[1].smtpReply == "550 5.1.1 No such user")
        #expect(try audit { $0.status = .redeemed }.map(\.id) == [redeemed])
        #expect(try audit { $0.status = .unredeemed }.isEmpty)
        #expect(try audit { $0.email = try EmailAddress("b@example.com") }.map(\.id) == [failed])
        #expect(try audit { $0.kind = .resetPassword }.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func sentLinkPastItsLifetimeIsAuditedAsExpired(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.links.lifetime[.verifyEmail] = 60 }
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        try store.record(try store.claim(policy, now: now)[0], Fixture.sent(at: now), policy: policy)
        var expired: [Int64] = []
        var filter = AuditFilter()
        filter.status = .expired
        try store.audit(filter, now: now.addingTimeInterval(30)) { expired.append($0.id) }
        #expect(expired.isEmpty)
        try store.audit(filter, now: now.addingTimeInterval(61)) { expired.append($0.id) }
        #expect(expired == [id])
    }

    /// `herald throttles` lists a bounded page: the newest hours first, the largest counts first within an hour.
    @Test(arguments: StoreKind.allCases)
    func abuseCountsListTheNewestHoursAndLargestCountsFirstUpToTheLimit(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let hour = now.addingTimeInterval(-600)
        let earlier = now.addingTimeInterval(-4200)
        try store.addAbuseCounts([
            AbuseCount(counter: "ip", key: "192.0.2.0/24", hour: earlier, count: 50),
            AbuseCount(counter: "ip", key: "198.51.100.0/24", hour: hour, count: 3),
            AbuseCount(counter: "ip", key: "203.0.113.0/24", hour: hour, count: 7),
            AbuseCount(counter: "account", key: "u1", hour: hour, count: 3),
        ])
        let since = now.addingTimeInterval(-7200)
        let shown = { (limit: Int) in try store.abuseCounts(since: since, limit: limit).map { "\($0.counter) \($0.key) \($0.count)" } }
        #expect(
            try shown(10) == ["ip 203.0.113.0/24 7", "account u1 3", "ip 198.51.100.0/24 3", "ip 192.0.2.0/24 50"])
        #expect(try shown(2) == ["ip 203.0.113.0/24 7", "account u1 3"])
    }
}

import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// What the `/admin` console reads: message search, one message's history, and recent sends.
@Suite struct ConsoleQueriesTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func searchFiltersByStateActionAddressAndCampaignNewestFirst(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let first = try store.enqueue(Fixture.request(.resetPassword, "a@example.com"), messageDomain: Fixture.messageDomain)
        let second = try store.enqueue(Fixture.request(.verifyEmail, "a@example.com"), messageDomain: Fixture.messageDomain)
        let other = try store.enqueue(Fixture.request(.resetPassword, "b@example.com"), messageDomain: Fixture.messageDomain)
        let campaign = try Fixture.campaign("news", now: now, in: store)
        _ = try Fixture.add(["c@example.com"], to: campaign, now: now, in: store)

        let address = try EmailAddress("a@example.com")
        #expect(try store.searchMessages(MessageSearch(email: address), limit: 10).map(\.id) == [second, first])
        #expect(try store.searchMessages(MessageSearch(kind: .resetPassword), limit: 10).map(\.id) == [other, first])
        #expect(try store.searchMessages(MessageSearch(kind: .resetPassword, email: address), limit: 10).map(\.id) == [first])
        #expect(try store.searchMessages(MessageSearch(campaign: campaign.id), limit: 10).map(\.recipient.value) == ["c@example.com"])
        #expect(try store.searchMessages(MessageSearch(state: .sent), limit: 10).isEmpty)
        #expect(try store.searchMessages(MessageSearch(), limit: 2).count == 2, "the limit holds")
    }

    @Test(arguments: StoreKind.allCases)
    func searchPagesByIdBothWaysWithoutGapsOrRepeats(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var ids: [Int64] = []
        for index in 0..<7 {
            ids.append(try store.enqueue(Fixture.request(.resetPassword, "p\(index)@example.com"), messageDomain: Fixture.messageDomain))
        }
        let newestFirst = Array(ids.reversed())
        var pages: [[Int64]] = []
        var search = MessageSearch()
        while true {
            let page = try store.searchMessages(search, limit: 3).map(\.id)
            guard let last = page.last else { break }
            pages.append(page)
            search.olderThan = last
        }
        #expect(pages == [Array(newestFirst[0..<3]), Array(newestFirst[3..<6]), [newestFirst[6]]])
        var back = MessageSearch()
        back.newerThan = newestFirst[6]
        #expect(try store.searchMessages(back, limit: 3).map(\.id) == Array(newestFirst[3..<6]), "the nearest newer rows, newest first")
        back.newerThan = newestFirst[2]
        #expect(try store.searchMessages(back, limit: 3).map(\.id) == Array(newestFirst[0..<2]))
    }

    @Test(arguments: StoreKind.allCases)
    func searchFiltersByQueueTimeRange(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var ids: [Int64] = []
        for (index, hoursAgo) in [3.0, 2.0, 1.0].enumerated() {
            let request = try Fixture.request(.resetPassword, "t\(index)@example.com")
            ids.append(try store.enqueue(request, messageDomain: Fixture.messageDomain, throttle: nil, now: now.addingTimeInterval(-hoursAgo * 3600)))
        }
        let window = MessageSearch(since: now.addingTimeInterval(-2.5 * 3600), until: now.addingTimeInterval(-1.5 * 3600))
        #expect(try store.searchMessages(window, limit: 10).map(\.id) == [ids[1]])
        #expect(try store.searchMessages(MessageSearch(since: now.addingTimeInterval(-2 * 3600)), limit: 10).map(\.id) == [ids[2], ids[1]])
    }

    @Test(arguments: StoreKind.allCases)
    func historyListsAttemptsOperatorEventsLinkEventsAndFeedbackInTimeOrder(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(.resetPassword, "a@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        let claimed = try #require(try store.claim(policy, now: now.addingTimeInterval(1)).first)
        try store.record(claimed, Fixture.failed(at: now.addingTimeInterval(2)), policy: policy)
        _ = try store.retry(RequeueFilter(states: [.failed], ids: [id]), actor: "console", dryRun: false, now: now.addingTimeInterval(3))
        let again = try #require(try store.claim(policy, now: now.addingTimeInterval(4)).first)
        try store.record(again, Fixture.sent(at: now.addingTimeInterval(5)), policy: policy)
        let code = try #require(try store.code(again.code.plaintext))
        try store.recordLinkEvent(codeID: code.id, kind: .click, visitor: Fixture.visitor, detail: nil, now: now.addingTimeInterval(6))
        _ = try store.recordFeedback(
            MailFeedback(outboxID: id, kind: .hard, status: "5.1.1", diagnostic: "550 5.1.1 gone"), softLimit: 3, softWindow: 86400,
            now: now.addingTimeInterval(7))

        let history = try #require(try store.history(outboxID: id))
        #expect(history.message.id == id)
        #expect(history.events.map(\.kind) == ["queued", "attempt", "retried", "attempt", "click", "hard"])
        #expect(history.events[0].at == now, "a retried row keeps its first queue time")
        #expect(history.events[1].replyCode == 550 && history.events[1].outcome == "failed")
        #expect(history.events[2].outcome == "console")
        #expect(history.events[3].detail == "250 2.0.0 Ok: queued")
        #expect(history.events[5].outcome == "5.1.1" && history.events[5].detail == "550 5.1.1 gone")
        #expect(try store.history(outboxID: id + 100) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func sendActivityCountsRecentAttemptsPerBucketOutcomeAndReplyClass(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let old = now.addingTimeInterval(-7200)
        for index in 0..<5 {
            _ = try store.enqueue(
                Fixture.request(.resetPassword, "r\(index)@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: old)
        }
        let claimed = try store.claim(policy, now: old)
        try store.record(claimed[0], Fixture.sent(at: old), policy: policy)  // two hours ago: outside the window
        try store.record(claimed[1], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[2], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[3], Fixture.failed(at: now), policy: policy)
        try store.record(claimed[4], Fixture.deferred(until: now.addingTimeInterval(60), at: now), policy: policy)

        let activity = try store.sendActivity(since: now.addingTimeInterval(-3600), bucketSeconds: 300)
        let counts = Dictionary(activity.map { ("\($0.outcome)/\($0.replyClass)", $0.count) }, uniquingKeysWith: +)
        #expect(counts == ["sent/2xx": 2, "failed/5xx": 1, "deferred/4xx": 1])
        let bucket = Date(milliseconds: now.milliseconds / 300_000 * 300_000)
        #expect(Set(activity.map(\.bucket)) == [bucket])
    }

    @Test(arguments: StoreKind.allCases)
    func linkActivityAndFeedbackCountRecentEventsPerBucketAndKind(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let old = now.addingTimeInterval(-7200)
        var ids: [Int64] = []
        for index in 0..<3 {
            ids.append(
                try store.enqueue(
                    Fixture.request(.resetPassword, "l\(index)@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: old))
        }
        var codes: [Int64] = []
        for claimed in try store.claim(policy, now: old) {
            try store.record(claimed, Fixture.sent(at: old), policy: policy)
            codes.append(try #require(try store.code(claimed.code.plaintext)).id)
        }
        try store.recordLinkEvent(codeID: codes[0], kind: .click, visitor: Fixture.visitor, detail: nil, now: old)  // outside the window
        try store.recordLinkEvent(codeID: codes[1], kind: .click, visitor: Fixture.visitor, detail: nil, now: now)
        try store.recordLinkEvent(codeID: codes[1], kind: .redeemed, visitor: Fixture.visitor, detail: nil, now: now)
        try store.recordLinkEvent(codeID: codes[2], kind: .rejected, visitor: Fixture.visitor, detail: nil, now: now)  // not counted
        _ = try store.recordFeedback(
            MailFeedback(outboxID: ids[0], kind: .hard, status: "5.1.1", diagnostic: "gone"), softLimit: 3, softWindow: 86400, now: old)
        _ = try store.recordFeedback(
            MailFeedback(outboxID: ids[1], kind: .soft, status: "4.2.2", diagnostic: "full"), softLimit: 3, softWindow: 86400, now: now)
        _ = try store.recordFeedback(
            MailFeedback(outboxID: ids[2], kind: .complaint, status: nil, diagnostic: "abuse"), softLimit: 3, softWindow: 86400, now: now)

        let since = now.addingTimeInterval(-3600)
        let links = try store.linkActivity(since: since, bucketSeconds: 300)
        #expect(Dictionary(links.map { ($0.kind, $0.count) }, uniquingKeysWith: +) == ["click": 1, "redeemed": 1])
        #expect(Set(links.map(\.bucket)) == [Date(milliseconds: now.milliseconds / 300_000 * 300_000)])
        #expect(try store.feedbackCounts(since: since) == [.soft: 1, .complaint: 1])
        #expect(try store.feedbackCounts(since: old) == [.hard: 1, .soft: 1, .complaint: 1])
    }

    @Test(arguments: StoreKind.allCases)
    func campaignSendsCountEachCampaignsRecentSends(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let old = now.addingTimeInterval(-600)
        let first = try Fixture.campaign("first", now: old, in: store)
        let second = try Fixture.campaign("second", now: old, in: store)
        _ = try Fixture.add(["a@example.com", "b@example.com", "c@example.com"], to: first, now: old, in: store)
        _ = try Fixture.add(["d@example.com", "e@example.com"], to: second, now: old, in: store)
        _ = try store.enqueue(Fixture.request(.resetPassword, "f@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: old)
        let claimed = try store.claim(policy, now: old).sorted { $0.message.id < $1.message.id }
        #expect(claimed.count == 6)
        try store.record(claimed[0], Fixture.sent(at: old), policy: policy)  // before the window
        try store.record(claimed[1], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[2], Fixture.failed(at: now), policy: policy)  // not sent
        try store.record(claimed[3], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[4], Fixture.sent(at: now), policy: policy)
        try store.record(claimed[5], Fixture.sent(at: now), policy: policy)  // no campaign

        #expect(try store.campaignSends(since: now.addingTimeInterval(-60)) == [first.id: 1, second.id: 2])
        #expect(try store.campaignSends(since: now.addingTimeInterval(60)).isEmpty)
    }
}

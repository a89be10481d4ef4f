import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The suppression list and what comes back about sent mail: bounces, complaints, unsubscribes.
@Suite struct SuppressionStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    /// One row sent to `email`; returns its id.
    func sentRow(_ email: String, in store: any HeraldStore) throws -> Int64 {
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(.verifyEmail, email), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy)
        try store.record(claimed[0], Fixture.sent(at: now), policy: policy)
        return id
    }

    @Test(arguments: StoreKind.allCases)
    func anEntryKeepsItsFirstReasonUnlessTheNewOneStopsMoreMail(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        #expect(try store.suppressions(emails: ["a@example.com"]).isEmpty)
        let unsubscribe = Suppression(email: "a@example.com", reason: .unsubscribe, createdAt: now)
        #expect(unsubscribe.scope == .campaigns)
        #expect(try store.suppress([unsubscribe], now: now) == 1)
        #expect(try store.suppress([unsubscribe], now: now) == 0)
        #expect(try store.suppressions(emails: ["a@example.com", "b@example.com"])["a@example.com"]?.reason == .unsubscribe)
        let complaint = Suppression(email: "a@example.com", reason: .complaint, detail: "abuse", createdAt: now)
        #expect(try store.suppress([complaint], now: now) == 1)
        let widened = try #require(try store.suppressions(emails: ["a@example.com"])["a@example.com"])
        #expect((widened.reason, widened.scope, widened.detail) == (.complaint, .all, "abuse"))
        #expect(try store.suppress([unsubscribe], now: now) == 0, "a narrower entry never narrows a wider one")
        #expect(try store.unsuppress(email: "a@example.com"))
        #expect(try !store.unsuppress(email: "a@example.com"))
    }

    @Test(arguments: StoreKind.allCases)
    func theListPagesInAddressOrderAndFiltersByReason(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let entries = ["c", "a", "d", "b"].map {
            Suppression(email: "\($0)@example.com", reason: $0 == "d" ? .complaint : .manual, createdAt: now)
        }
        #expect(try store.suppress(entries, now: now) == 4)
        #expect(try store.listSuppressions(reason: nil, after: nil, limit: 2).map(\.email) == ["a@example.com", "b@example.com"])
        #expect(try store.listSuppressions(reason: nil, after: "b@example.com", limit: 10).map(\.email) == ["c@example.com", "d@example.com"])
        #expect(try store.listSuppressions(reason: .complaint, after: nil, limit: 10).map(\.email) == ["d@example.com"])
    }

    @Test(arguments: StoreKind.allCases)
    func theRecentListPagesNewestFirstThroughTiesInTime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let entries = [("a", 0), ("b", 2), ("c", 1), ("d", 2), ("e", 3)].map { name, second in
            Suppression(
                email: "\(name)@example.com", reason: name == "c" ? .complaint : .manual, createdAt: now.addingTimeInterval(Double(second)))
        }
        let lapsed = Suppression(email: "z@example.com", reason: .softBounce, createdAt: now, expiresAt: now.addingTimeInterval(-1))
        #expect(try store.suppress(entries + [lapsed], now: now) == 6)
        var seen: [String] = []
        var after: SuppressionCursor?
        for _ in 0..<5 {
            let page = try store.recentSuppressions(reason: nil, after: after, limit: 2)
            seen += page.map(\.email)
            guard let last = page.last, page.count == 2 else { break }
            after = SuppressionCursor(after: last)
        }
        #expect(seen == ["e", "d", "b", "c", "a"].map { "\($0)@example.com" })
        #expect(try store.recentSuppressions(reason: .complaint, after: nil, limit: 10).map(\.email) == ["c@example.com"])
        #expect(SuppressionCursor("\(now.milliseconds),d@example.com") == SuppressionCursor(createdAt: now, email: "d@example.com"))
        #expect(SuppressionCursor("d@example.com") == nil && SuppressionCursor("12,") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func aHardBounceMarksTheRowAndSuppressesTheAddressAtOnce(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let id = try sentRow("gone@example.com", in: store)
        let outcome = try store.recordFeedback(
            MailFeedback(outboxID: id, kind: .hard, status: "5.1.1", diagnostic: "550 5.1.1 user unknown"), softLimit: 3,
            softWindow: 86_400, now: now)
        #expect(outcome?.state == .bounced)
        #expect(outcome?.suppressed?.reason == .hardBounce)
        let row = try #require(try store.messages().first { $0.id == id })
        #expect(row.state == .bounced)
        #expect(row.lastReply?.contains("550 5.1.1 user unknown") == true)
        let entry = try #require(try store.suppressions(emails: ["gone@example.com"])["gone@example.com"])
        #expect((entry.reason, entry.scope, entry.outboxID) == (.hardBounce, .all, id))
        #expect(
            try store.recordFeedback(
                MailFeedback(outboxID: id + 100, kind: .hard, status: nil, diagnostic: "x"), softLimit: 3,
                softWindow: 86_400, now: now) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func softBouncesSuppressOnlyAtTheLimitWithinTheWindow(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let id = try sentRow("full@example.com", in: store)
        let soft = MailFeedback(outboxID: id, kind: .soft, status: "4.2.2", diagnostic: "mailbox full")
        let old = now.addingTimeInterval(-10 * 86_400)
        #expect(try store.recordFeedback(soft, softLimit: 2, softWindow: 7 * 86_400, now: old)?.suppressed == nil)
        // The first is outside the window by now: this one alone is under the limit.
        #expect(try store.recordFeedback(soft, softLimit: 2, softWindow: 7 * 86_400, now: now)?.suppressed == nil)
        // The same message's report again counts once: the limit is on messages.
        #expect(try store.recordFeedback(soft, softLimit: 2, softWindow: 7 * 86_400, now: now.addingTimeInterval(30))?.suppressed == nil)
        let other = try sentRow("full@example.com", in: store)
        let third = try store.recordFeedback(
            MailFeedback(outboxID: other, kind: .soft, status: "4.2.2", diagnostic: "mailbox full"), softLimit: 2, softWindow: 7 * 86_400,
            now: now.addingTimeInterval(60))
        #expect(third?.suppressed?.reason == .softBounce)
        #expect(third?.suppressed?.expiresAt == now.addingTimeInterval(60 + 7 * 86_400), "a full mailbox empties: it lapses")
        #expect(third?.state == .bounced)
    }

    @Test(arguments: StoreKind.allCases)
    func aLapsedEntryStopsNothingAndATemporaryOneNeverReplacesOneForGood(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let past = Date().addingTimeInterval(-60)
        let lapsed = Suppression(email: "a@example.com", reason: .softBounce, createdAt: past, expiresAt: past)
        #expect(try store.suppress([lapsed], now: past) == 1)
        #expect(try store.suppressions(emails: ["a@example.com"]).isEmpty)
        #expect(try store.listSuppressions(reason: nil, after: nil, limit: 10).isEmpty)
        let unsubscribe = Suppression(email: "a@example.com", reason: .unsubscribe, createdAt: now)
        #expect(try store.suppress([unsubscribe], now: now) == 1, "a lapsed entry is replaced")
        let soft = Suppression(email: "a@example.com", reason: .softBounce, createdAt: now, expiresAt: now.addingTimeInterval(3600))
        #expect(try store.suppress([soft], now: now) == 0, "an unsubscribe outlives a full mailbox")
        #expect(try store.suppressions(emails: ["a@example.com"])["a@example.com"]?.reason == .unsubscribe)
    }

    @Test(arguments: StoreKind.allCases)
    func aComplaintOutranksABounceAndFeedbackOnUnsentMailLeavesTheRowAlone(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let id = try sentRow("angry@example.com", in: store)
        _ = try store.recordFeedback(
            MailFeedback(outboxID: id, kind: .soft, status: "4.0.0", diagnostic: "later"), softLimit: 5,
            softWindow: 86_400, now: now)
        let complaint = try store.recordFeedback(
            MailFeedback(outboxID: id, kind: .complaint, status: nil, diagnostic: "abuse"), softLimit: 5, softWindow: 86_400, now: now)
        #expect(complaint?.state == .complained)
        let queued = try store.enqueue(Fixture.request(.verifyEmail, "queued@example.com"), messageDomain: Fixture.messageDomain)
        let early = try store.recordFeedback(
            MailFeedback(outboxID: queued, kind: .hard, status: "5.1.1", diagnostic: "x"), softLimit: 5, softWindow: 86_400, now: now)
        #expect(early?.state == .queued)
    }

    @Test(arguments: StoreKind.allCases)
    func theClaimCancelsRowsWhoseAddressWasSuppressedAfterTheyWereQueued(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("news", now: now, in: store)
        _ = try Fixture.add(["unsub@example.com", "ok@example.com"], to: campaign, now: now, in: store)
        let single = try store.enqueue(Fixture.request(.resetPassword, "unsub@example.com"), messageDomain: Fixture.messageDomain)
        let bounced = try store.enqueue(Fixture.request(.resetPassword, "gone@example.com"), messageDomain: Fixture.messageDomain)
        try store.suppress(
            [
                Suppression(email: "unsub@example.com", reason: .unsubscribe, createdAt: now),
                Suppression(email: "gone@example.com", reason: .hardBounce, createdAt: now),
            ], now: now)
        let batch = try store.claimBatch(Fixture.policy(), owner: "local/0", now: now.addingTimeInterval(1))
        #expect(batch.taken == 4, "the rows cancelled on the spot count among those the claim took")
        let claimed = batch.messages
        let recipients = claimed.map { ($0.message.recipient.value, $0.message.campaignID != nil) }
        #expect(recipients.count == 2)
        #expect(recipients.contains { $0 == ("ok@example.com", true) })
        #expect(recipients.contains { $0 == ("unsub@example.com", false) }, "an unsubscribe stops campaigns only")
        #expect(!claimed.contains { $0.message.id == bounced })
        #expect(claimed.contains { $0.message.id == single })
        let rows = try store.messages()
        let cancelled = rows.filter { $0.state == .cancelled }
        #expect(Set(cancelled.map(\.recipient.value)) == ["unsub@example.com", "gone@example.com"])
        #expect(cancelled.allSatisfy { $0.attempts == 0 && ($0.lastReply ?? "").hasPrefix("suppressed (") })
    }

    @Test(arguments: StoreKind.allCases)
    func theCampaignReportCountsEachMessageOnceAmongBouncesAndOnceAmongComplaints(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("news", now: now, in: store)
        let emails = ["full@example.com", "angry@example.com", "gone@example.com", "fine@example.com"]
        _ = try Fixture.add(emails, to: campaign, now: now, in: store)
        let policy = Fixture.policy()
        let claimed = try store.claim(policy, now: now.addingTimeInterval(1))
        #expect(claimed.count == 4)
        for message in claimed { try store.record(message, Fixture.sent(at: now.addingTimeInterval(2)), policy: policy) }
        let id = Dictionary(uniqueKeysWithValues: claimed.map { ($0.message.recipient.value, $0.message.id) })
        func feedback(_ email: String, _ kind: MailFeedback.Kind, _ status: String?) throws {
            _ = try store.recordFeedback(
                MailFeedback(outboxID: try #require(id[email]), kind: kind, status: status, diagnostic: "\(kind) \(status ?? "-")"),
                softLimit: 5, softWindow: 86_400, now: now.addingTimeInterval(3))
        }
        // A full mailbox that later bounced for good counts once, as hard; so does a hard bounce followed by a late
        // delay notice. A complaint about a message that also bounced counts among complaints as well.
        try feedback("full@example.com", .soft, "4.2.2")
        try feedback("full@example.com", .hard, "5.1.1")
        try feedback("angry@example.com", .soft, "4.4.1")
        try feedback("angry@example.com", .complaint, nil)
        try feedback("gone@example.com", .hard, "5.1.1")
        try feedback("gone@example.com", .soft, "4.4.7")
        let report = try store.report(campaign: campaign.id, now: now.addingTimeInterval(4))
        #expect(report.sent == 4)
        #expect(
            Set(report.feedback)
                == [
                    FeedbackCount(kind: .hard, statusClass: "5.1", count: 2), FeedbackCount(kind: .soft, statusClass: "4.4", count: 1),
                    FeedbackCount(kind: .complaint, statusClass: nil, count: 1),
                ])
        #expect((report.bounced, report.complained) == (3, 1))
        #expect(report.bounceRate == 0.75 && report.complaintRate == 0.25)
    }
}

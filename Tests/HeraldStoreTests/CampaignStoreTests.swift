import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Campaigns: queueing recipients on a schedule, and pause, resume and cancel as the worker sees them.
@Suite struct CampaignStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func campaignIsCreatedOnceByNameAndForOneActionOnly(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let created = try Fixture.campaign("spring", .resetPassword, rate: 5, linkLifetime: 86_400, now: now, in: store)
        #expect(created.state == .active)
        #expect(created.rate == 5)
        #expect(created.linkLifetime == 86_400)
        #expect(try Fixture.campaign("spring", .resetPassword, rate: 1, now: now, in: store) == created)
        let error = #expect(throws: HeraldError.self) { try Fixture.campaign("spring", .verifyEmail, now: now, in: store) }
        #expect(error?.code == .argumentError)
        let other = try Fixture.campaign("autumn", now: now, in: store)
        #expect(try store.campaigns().map(\.id) == [created.id, other.id])
        #expect(try store.campaign(id: other.id) == other)
        let missing = #expect(throws: HeraldError.self) { try store.campaign(id: other.id + 100) }
        #expect(missing?.code == .notFound)
    }

    @Test(arguments: StoreKind.allCases)
    func aCampaignsOwnTemplatesAreKeptAndReplacedWhole(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("templated", now: now, in: store)
        let other = try Fixture.campaign("plain", now: now, in: store)
        #expect(try store.campaignTemplates(campaign: campaign.id).isEmpty)
        let en = try LocaleTag("en")
        let pl = try LocaleTag("pl")
        let files = [
            TemplateFile(locale: en, part: "subject", text: "Spring {{plan}}"), TemplateFile(locale: en, part: "body.txt", text: "é ✓ {{link}}"),
            TemplateFile(locale: pl, part: "subject", text: "Wiosna"),
        ]
        try store.setTemplates(files, campaign: campaign.id)
        let kept = try store.campaignTemplates(campaign: campaign.id)
        #expect(Set(kept) == Set(files) && kept.count == 3)
        #expect(try store.campaignTemplates(campaign: other.id).isEmpty)
        try store.setTemplates([files[2]], campaign: campaign.id)
        #expect(try store.campaignTemplates(campaign: campaign.id) == [files[2]])
        try store.setTemplates([], campaign: campaign.id)
        #expect(try store.campaignTemplates(campaign: campaign.id).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func reRunningAnImportSkipsItsLinesAndFlagsRepeatedAddresses(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("welcome", now: now, in: store)
        var schedule = CampaignSchedule(start: now, interval: 0, position: 0)
        let first = [Fixture.recipient("a@example.com", line: 2), Fixture.recipient("b@example.com", line: 3)]
        let add = { (recipients: [CampaignRecipient]) in
            try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        }
        #expect(try add(first) == [.imported, .imported])
        #expect(try add(first) == [.alreadyImported, .alreadyImported])
        #expect(try add([Fixture.recipient("c@example.com", line: 4), Fixture.recipient("a@example.com", line: 9)]) == [.imported, .duplicate])
        #expect(schedule.position == 3)
        #expect(try store.importedCount(campaign: campaign.id) == 3)
        #expect(try store.counts(campaign: campaign.id) == [.queued: 3])
    }

    @Test(arguments: StoreKind.allCases)
    func aResumedImportAcrossManyInsertChunksSortsOutEveryRowAndLeavesNoGapInTheSchedule(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("large", rate: 10, now: now, in: store)
        var schedule = CampaignSchedule(start: now, interval: 0.1, position: 0)
        let add = { (recipients: [CampaignRecipient]) in
            try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        }
        let first = (0..<150).map { Fixture.recipient("u\($0)@example.com", line: $0 + 2) }
        #expect(try add(first) == Array(repeating: .imported, count: 150))
        // The same file again with 300 more lines: chunks of old rows only, of old and new rows, of new rows only;
        // an address of the first run on a new line, and a new address twice.
        var second = first + (150..<450).map { Fixture.recipient("u\($0)@example.com", line: $0 + 2) }
        second.insert(Fixture.recipient("u7@example.com", line: 1000), at: 170)
        second.insert(Fixture.recipient("u200@example.com", line: 1001), at: 260)
        let outcomes = try add(second)
        #expect(outcomes[..<150].allSatisfy { $0 == .alreadyImported })
        #expect(outcomes[170] == .duplicate && outcomes[260] == .duplicate)
        #expect(outcomes.filter { $0 == .imported }.count == 300)
        #expect(schedule.position == 450)
        let rows = try store.messages()
        #expect(rows.map { $0.nextAttemptAt.milliseconds - now.milliseconds } == (0..<450).map { Int64($0) * 100 })
        #expect(rows.map(\.email.value) == (0..<450).map { "u\($0)@example.com" })
    }

    @Test(arguments: StoreKind.allCases)
    func accountImportsWithoutLinesAreAlsoIdempotent(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("accounts", now: now, in: store)
        var schedule = CampaignSchedule(start: now, interval: 0, position: 0)
        let recipients = [Fixture.recipient("a@example.com"), Fixture.recipient("b@example.com")]
        _ = try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        let again = try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        #expect(again == [.alreadyImported, .alreadyImported])
    }

    @Test(arguments: StoreKind.allCases)
    func importedRowsAreSpacedByTheScheduleAndAResumedImportContinuesIt(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("paced", rate: 2, now: now, in: store)
        let start = Date(milliseconds: now.milliseconds + 60_000)
        var schedule = CampaignSchedule(start: start, interval: 0.5, position: 0)
        let recipients = (0..<3).map { Fixture.recipient("u\($0)@example.com", line: $0 + 2) }
        _ = try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        var resumed = CampaignSchedule(start: start, interval: 0.5, position: try store.importedCount(campaign: campaign.id))
        _ = try store.addRecipients(
            [Fixture.recipient("u3@example.com", line: 5)], to: campaign, schedule: &resumed, messageDomain: Fixture.messageDomain, now: now)
        let due = try store.messages().map { $0.nextAttemptAt.milliseconds - start.milliseconds }
        #expect(due == [0, 500, 1000, 1500])
        #expect(try store.claim(Fixture.policy(), now: now).isEmpty)
        #expect(try store.claim(Fixture.policy(), now: Date(milliseconds: start.milliseconds + 600)).count == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func campaignRowsCarryTheCampaignTheirVariablesAndLinkLifetime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let settings = ActionCodeSettings(url: "https://localhost/welcome")
        let campaign = try Fixture.campaign("welcome", settings: settings, linkLifetime: 86_400, now: now, in: store)
        var schedule = CampaignSchedule(start: now, interval: 0, position: 0)
        let recipient = Fixture.recipient("ada@example.com", line: 2, variablesJSON: #"{"plan":"pro"}"#)
        _ = try store.addRecipients([recipient], to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        let row = try #require(try store.messages().first)
        #expect(row.campaignID == campaign.id)
        #expect(row.kind == .verifyEmail)
        #expect(row.settings == settings)
        #expect(row.variables == ["plan": "pro"])
        #expect(row.linkLifetime == 86_400)
        let policy = Fixture.policy()
        let claimed = try #require(try store.claim(policy, now: now).first)
        try store.record(claimed, Fixture.sent(at: now), policy: policy)
        #expect(try store.code(claimed.code.plaintext)?.expiresAt.milliseconds == now.milliseconds + 86_400_000)
    }

    @Test(arguments: StoreKind.allCases)
    func transactionalMailIsClaimedBeforeCampaignRows(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("welcome", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com"], to: campaign, now: now, in: store)
        let transactional = try store.enqueue(
            Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain, throttle: nil, now: now.addingTimeInterval(1))
        let claimed = try store.claim(Fixture.policy { $0.worker.batchSize = 1 }, now: now.addingTimeInterval(2))
        #expect(claimed.map(\.message.id) == [transactional])
    }

    @Test(arguments: StoreKind.allCases)
    func campaignRowsAreNotExpiredByTheTransactionalQueueWait(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("resets", .resetPassword, now: now, in: store)
        try Fixture.add(["a@example.com"], to: campaign, now: now, in: store)
        let policy = Fixture.policy { $0.worker.maxQueueWait = [.resetPassword: 60] }
        let claimed = try store.claim(policy, now: now.addingTimeInterval(3600))
        #expect(claimed.map(\.message.campaignID) == [campaign.id])
    }

    @Test(arguments: StoreKind.allCases)
    func pausedCampaignIsNotClaimedUntilResumed(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("verify", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com"], to: campaign, now: now, in: store)
        try store.pause(campaign: campaign.id, now: now)
        #expect(try store.campaign(id: campaign.id).state == .paused)
        #expect(try store.claim(Fixture.policy(), now: now).isEmpty)
        #expect(try store.counts(campaign: campaign.id) == [.queued: 2])
        try store.resume(campaign: campaign.id, now: now)
        #expect(try store.campaign(id: campaign.id).state == .active)
        #expect(try store.claim(Fixture.policy(), now: now).count == 2)
    }

    @Test(arguments: StoreKind.allCases)
    func resumeSpacesTheRemainingRowsFromNowAtTheCampaignRate(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("paced", rate: 2, now: now, in: store)
        var schedule = CampaignSchedule(start: now, interval: 0.5, position: 0)
        let recipients = (0..<4).map { Fixture.recipient("u\($0)@example.com", line: $0 + 2) }
        _ = try store.addRecipients(recipients, to: campaign, schedule: &schedule, messageDomain: Fixture.messageDomain, now: now)
        let policy = Fixture.policy { $0.worker.batchSize = 1 }
        let first = try #require(try store.claim(policy, now: now).first)
        try store.record(first, Fixture.sent(at: now), policy: policy)
        try store.pause(campaign: campaign.id, now: now)
        let resumedAt = Date(milliseconds: now.milliseconds + 100_000)
        try store.resume(campaign: campaign.id, now: resumedAt)
        let due = try store.messages(state: .queued).map { $0.nextAttemptAt.milliseconds - resumedAt.milliseconds }
        #expect(due == [0, 500, 1000])
    }

    @Test(arguments: StoreKind.allCases)
    func resumeWithoutARateKeepsTheSchedule(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("unpaced", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com"], to: campaign, now: now, in: store)
        try store.pause(campaign: campaign.id, now: now)
        try store.resume(campaign: campaign.id, now: now.addingTimeInterval(100))
        #expect(try store.messages().map(\.nextAttemptAt.milliseconds) == [now.milliseconds, now.milliseconds])
    }

    @Test(arguments: StoreKind.allCases)
    func cancelMarksEveryUnsentRowAndKeepsSentOnes(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("verify", now: now, in: store)
        try Fixture.add(["a@example.com", "b@example.com", "c@example.com"], to: campaign, now: now, in: store)
        let policy = Fixture.policy { $0.worker.batchSize = 1 }
        let sent = try #require(try store.claim(policy, now: now).first)
        try store.record(sent, Fixture.sent(at: now), policy: policy)
        try store.pause(campaign: campaign.id, now: now)
        #expect(try store.cancel(campaign: campaign.id, now: now) == 2)
        #expect(try store.counts(campaign: campaign.id) == [.sent: 1, .cancelled: 2])
        #expect(try store.campaign(id: campaign.id).state == .cancelled)
        let resume = #expect(throws: HeraldError.self) { try store.resume(campaign: campaign.id, now: now) }
        #expect(resume?.code == .argumentError)
        let pause = #expect(throws: HeraldError.self) { try store.pause(campaign: campaign.id, now: now) }
        #expect(pause?.code == .argumentError)
        let missing = #expect(throws: HeraldError.self) { try store.cancel(campaign: campaign.id + 100, now: now) }
        #expect(missing?.code == .notFound)
    }

    @Test(arguments: StoreKind.allCases)
    func rejectedCountIsKeptWithTheCampaign(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let campaign = try Fixture.campaign("welcome", now: now, in: store)
        try store.setRejected(campaign: campaign.id, count: 7, now: now)
        #expect(try store.campaign(id: campaign.id).rejected == 7)
    }

    @Test(arguments: StoreKind.allCases)
    func campaignAccountsAreEnabledAccountsWithAnAddressOldestFirst(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let accounts = [
            Fixture.account("verified@example.com", verified: true, now: now),
            Fixture.account("unverified@example.com", now: now.addingTimeInterval(1)),
            Fixture.account("disabled@example.com", disabled: true, now: now.addingTimeInterval(2)),
            Fixture.account(nil, now: now.addingTimeInterval(3)),
        ]
        for account in accounts { try store.createAccount(account) }
        _ = try store.updateAccount(uid: accounts[1].uid) { $0.displayName = "Una" }
        let all = try store.campaignAccounts(unverifiedOnly: false, after: nil, limit: 10)
        #expect(all.map(\.email) == ["verified@example.com", "unverified@example.com"])
        #expect(all.map(\.displayName) == [nil, "Una"])
        #expect(try store.campaignAccounts(unverifiedOnly: true, after: nil, limit: 10).map(\.email) == ["unverified@example.com"])
    }

    /// `campaigns create --from-accounts` reads the accounts a page at a time: the pages, each after the last account
    /// of the one before, hold every account once, oldest first, even where accounts share a creation time.
    @Test(arguments: StoreKind.allCases)
    func campaignAccountsPageInCreationOrderThroughTies(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var expected: [String] = []
        for index in 0..<23 {
            // Three accounts per millisecond, their uids out of creation order.
            let uid = String(format: "u%02d", (index * 7) % 23)
            let email = "a\(index)@example.com"
            try store.createAccount(Fixture.account(email, uid: uid, now: now.addingTimeInterval(Double(index / 3) / 1000)))
            expected.append(email)
        }
        var pages: [[CampaignAccount]] = []
        var last: CampaignAccount?
        repeat {
            let page = try store.campaignAccounts(unverifiedOnly: false, after: last, limit: 5)
            pages.append(page)
            last = page.count == 5 ? page.last : nil
        } while last != nil
        #expect(pages.map(\.count) == [5, 5, 5, 5, 3])
        let listed = pages.flatMap { $0 }
        #expect(Set(listed.map(\.email)) == Set(expected) && listed.count == expected.count)
        let order = listed.map { "\($0.createdAt) \($0.uid)" }
        #expect(order == order.sorted(), "oldest first, then by uid")
    }
}

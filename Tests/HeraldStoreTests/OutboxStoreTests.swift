import Foundation
import GRDB
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Queueing requests: durability, what a row holds, the per-recipient throttle, and the outbox queries.
@Suite struct OutboxStoreTests {
    let scratch = ScratchDirectory()

    @Test(arguments: StoreKind.allCases)
    func enqueuedRequestIsQueuedAndSurvivesReopening(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let request = try ActionRequest(
            kind: .verifyAndChangeEmail, email: "Ada@Example.com", newEmail: "ada@new.example", locale: "pl", displayName: "Ada L",
            links: Fixture.links)
        let now = Date()
        let id = try store.enqueue(request, messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        let rows = try kind.makeStore(in: scratch).messages()
        #expect(rows.map(\.id) == [id])
        let row = try #require(rows.first)
        #expect(row.state == .queued)
        #expect(row.attempts == 0)
        #expect(row.kind == .verifyAndChangeEmail)
        #expect(row.email.value == "ada@example.com")
        #expect(row.recipient.value == "ada@new.example")
        #expect(row.newEmail?.value == "ada@new.example")
        #expect(row.locale.value == "pl")
        #expect(row.displayName == "Ada L")
        #expect(row.campaignID == nil)
        #expect(row.queuedAt.milliseconds == now.milliseconds)
        #expect(row.nextAttemptAt.milliseconds == now.milliseconds)
        #expect(row.messageID.hasPrefix("<") && row.messageID.hasSuffix("@herald.test>"))
    }

    @Test(arguments: StoreKind.allCases)
    func aNetworkPastItsShareIsRefusedAndCountsNothingAgainstTheProject(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        func quota(_ network: String) -> SendQuota {
            SendQuota(projectPerHour: 10, accountPerHour: 0, accountKey: "", networkPerHour: 2, networkKey: network)
        }
        let now = Date()
        for index in 0..<2 {
            _ = try store.enqueue(
                Fixture.request(.signIn, "n\(index)@example.com"), messageDomain: Fixture.messageDomain, throttle: nil,
                quota: quota("198.51.100.0/24"), now: now)
        }
        let refusal = #expect(throws: LimitRefusal.self) {
            try store.enqueue(
                Fixture.request(.signIn, "n2@example.com"), messageDomain: Fixture.messageDomain, throttle: nil,
                quota: quota("198.51.100.0/24"), now: now)
        }
        #expect(refusal?.counter == "network" && refusal?.error.code == .tooManyAttempts)
        _ = try store.enqueue(
            Fixture.request(.signIn, "n3@example.com"), messageDomain: Fixture.messageDomain, throttle: nil,
            quota: quota("2001:db8:1::/48"), now: now)
        let counts = try kind.rows(in: scratch, "SELECT scope, key, count FROM send_counts ORDER BY scope, key")
        #expect(
            counts.map { "\($0["scope"]!!) \($0["key"]!!) \($0["count"]!!)" } == [
                "network 198.51.100.0/24 2", "network 2001:db8:1::/48 1", "project  3",
            ])
    }

    @Test(arguments: StoreKind.allCases)
    func everyRowGetsItsOwnMessageID(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let requests = try Array(repeating: Fixture.request(), count: 5)
        #expect(try store.enqueue(requests, messageDomain: Fixture.messageDomain, batchSize: 2, now: Date()) == 5)
        #expect(Set(try store.messages().map(\.messageID)).count == 5)
    }

    @Test(arguments: StoreKind.allCases)
    func bulkKeyQueuesEachRecipientOnceAcrossRuns(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        func enqueue(_ requests: [ActionRequest], key: String?) throws -> BulkEnqueueResult {
            try store.enqueue(requests, bulkKey: key, messageDomain: Fixture.messageDomain, batchSize: 2, now: Date())
        }
        let file = try ["a", "b", "c", "d", "e"].map { try Fixture.request(.verifyEmail, "\($0)@example.com") }
        #expect(try enqueue(file, key: "file") == BulkEnqueueResult(newlyQueued: 5, alreadyQueued: 0))
        #expect(try enqueue(file, key: "file") == BulkEnqueueResult(newlyQueued: 0, alreadyQueued: 5))
        let longer = try file + [Fixture.request(.verifyEmail, "f@example.com")]
        #expect(try enqueue(longer, key: "file") == BulkEnqueueResult(newlyQueued: 1, alreadyQueued: 5))
        // The key is what makes a run the same: another key, or none, queues the recipients again.
        #expect(try enqueue(file, key: "other file").newlyQueued == 5)
        #expect(try enqueue(file, key: nil).newlyQueued == 5)
        #expect(try store.messages().count == 16)
    }

    @Test(arguments: StoreKind.allCases)
    func bulkEnqueueFailingPartWayKeepsEarlierBatchesAndARerunQueuesTheRest(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let requests = try (1...5).map { try Fixture.request(.verifyEmail, "user\($0)@example.com") }
        func enqueue() throws -> BulkEnqueueResult {
            try store.enqueue(requests, bulkKey: "file", messageDomain: Fixture.messageDomain, batchSize: 2, now: Date())
        }
        // The third row fails, as on a full disk: the first batch stays committed, the second rolls back.
        try kind.execute(
            in: scratch,
            sqlite: """
                CREATE TRIGGER full_disk BEFORE INSERT ON outbox WHEN (SELECT COUNT(*) FROM outbox) >= 2
                BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                """,
            postgres: """
                CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                    IF (SELECT COUNT(*) FROM outbox) >= 2 THEN RAISE EXCEPTION 'disk full' USING ERRCODE = '53100'; END IF;
                    RETURN NEW;
                END $$
                ;
                CREATE TRIGGER full_disk BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION full_disk()
                """)
        let failure = #expect(throws: BulkEnqueueFailure.self) { try enqueue() }
        #expect(failure?.committed == BulkEnqueueResult(newlyQueued: 2, alreadyQueued: 0))
        #expect(failure?.requested == 5)
        #expect(try store.messages().count == 2)

        try kind.execute(in: scratch, sqlite: "DROP TRIGGER full_disk", postgres: "DROP TRIGGER full_disk ON outbox")
        #expect(try enqueue() == BulkEnqueueResult(newlyQueued: 3, alreadyQueued: 2))
        #expect(try store.messages().map(\.recipient.value) == requests.map(\.recipient.value))
    }

    @Test(arguments: StoreKind.allCases)
    func throttleEnforcesTheCooldownAndTheDailyCap(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let throttle = SendThrottle(cooldown: 60, dailyCap: 2)
        let request = try Fixture.request(.resetPassword)
        let start = Date()
        func enqueue(after seconds: TimeInterval) throws {
            _ = try store.enqueue(request, messageDomain: Fixture.messageDomain, throttle: throttle, now: start.addingTimeInterval(seconds))
        }
        try enqueue(after: 0)
        let withinCooldown = #expect(throws: HeraldError.self) { try enqueue(after: 30) }
        #expect(withinCooldown?.code == .tooManyAttempts)
        try enqueue(after: 61)
        let overTheCap = #expect(throws: HeraldError.self) { try enqueue(after: 200) }
        #expect(overTheCap?.code == .tooManyAttempts)
        // The cap counts a rolling 24 hours.
        try enqueue(after: 86_401)
        #expect(try store.messages().count == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func throttleCountsOnlyTheSameActionToTheSameRecipient(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let throttle = SendThrottle(cooldown: 60, dailyCap: 1)
        let now = Date()
        _ = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain, throttle: throttle, now: now)
        _ = try store.enqueue(Fixture.request(.verifyEmail), messageDomain: Fixture.messageDomain, throttle: throttle, now: now)
        _ = try store.enqueue(Fixture.request(.resetPassword, "bob@example.com"), messageDomain: Fixture.messageDomain, throttle: throttle, now: now)
        #expect(try store.messages().count == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func campaignRowsDoNotCountAgainstTheThrottle(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let campaign = try Fixture.campaign("resets", .resetPassword, now: now, in: store)
        try Fixture.add(["ada@example.com"], to: campaign, now: now, in: store)
        let throttle = SendThrottle(cooldown: 60, dailyCap: 1)
        _ = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain, throttle: throttle, now: now)
        #expect(try store.stateCounts() == [.queued: 2])
    }

    @Test(arguments: StoreKind.allCases)
    func messagesFilterByStateAndAddressInIDOrder(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let ada = try store.enqueue(Fixture.request(.verifyEmail, "ada@example.com"), messageDomain: Fixture.messageDomain)
        let bob = try store.enqueue(Fixture.request(.verifyEmail, "bob@example.com"), messageDomain: Fixture.messageDomain)
        let change = try store.enqueue(Fixture.request(.verifyAndChangeEmail, "ada@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(Fixture.policy { $0.worker.batchSize = 1 })
        try store.record(claimed[0], Fixture.sent(), policy: policy)
        #expect(try store.messages().map(\.id) == [ada, bob, change])
        #expect(try store.messages(state: .sent).map(\.id) == [ada])
        #expect(try store.messages(state: .queued).map(\.id) == [bob, change])
        #expect(try store.messages(email: EmailAddress("ada@example.com")).map(\.id) == [ada, change])
        #expect(try store.messages(email: EmailAddress("new-ada@example.com")).map(\.id) == [change])
        #expect(try store.messages(state: .queued, email: EmailAddress("ada@example.com")).map(\.id) == [change])
        #expect(try store.messages(state: nil, email: nil, limit: 2).map(\.id) == [ada, bob])
        #expect(try store.stateCounts() == [.sent: 1, .queued: 2])
    }
}

import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// `herald migrate --from sqlite:PATH`: a SQLite ledger copied into PostgreSQL, ids and all, and the
/// PostgreSQL-only pieces (shared rate slots).
@Suite(.enabled(if: StoreKind.allCases.contains(.postgres), "needs HERALD_TEST_POSTGRES"))
struct PostgresCopyTests {
    let scratch = ScratchDirectory()

    @Test func aSQLiteLedgerIsCopiedWithItsIDsAndNewRowsContinueAfterThem() throws {
        let sqlite = try SQLiteStore(path: scratch.path("old.sqlite"))
        let now = Date()
        try sqlite.createAccount(Fixture.account("grace@example.com", verified: true, now: now))
        var ids: [Int64] = []
        for index in 0..<5 { ids.append(try sqlite.enqueue(Fixture.request(.verifyEmail, "u\(index)@example.com"), messageDomain: "x.test")) }
        let claimed = try sqlite.claim(Fixture.policy(), now: Date())
        #expect(claimed.count == 5)
        try sqlite.record(claimed.map { ($0, Fixture.sent(at: now)) }, policy: Fixture.policy())
        let code = try sqlite.mintCode(.resetPassword, email: "grace@example.com", newEmail: nil, continueURL: nil, lifetime: 3600, now: now)
        // A campaign (not started) with a row an operator cancelled, and a bounce that suppressed its address.
        let campaign = try Fixture.campaign("news", now: now.addingTimeInterval(3600), in: sqlite)
        _ = try Fixture.add(["c1@example.com", "c2@example.com", "c3@example.com"], to: campaign, now: now, in: sqlite)
        let c3 = try #require(try sqlite.messages().first { $0.recipient.value == "c3@example.com" }?.id)
        #expect(try sqlite.cancel(RequeueFilter(states: [.queued], ids: [c3]), actor: "test", dryRun: false, now: now).ids == [c3])
        _ = try sqlite.recordFeedback(
            MailFeedback(outboxID: ids[0], kind: .hard, status: "5.1.1", diagnostic: "550 5.1.1 user unknown"), softLimit: 3,
            softWindow: 86_400, now: now)

        let postgres = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "copy") as? PostgresStore)
        let report = try postgres.copy(fromSQLite: scratch.path("old.sqlite"))
        let rows = Dictionary(uniqueKeysWithValues: report.tables.map { ($0.name, $0.rows) })
        #expect(rows["outbox"] == 8)
        #expect(rows["accounts"] == 1)
        #expect(rows["delivery_attempts"] == 5)
        #expect(rows["action_codes"] == 6)
        #expect(rows["campaigns"] == 1)
        #expect(rows["suppressions"] == 1 && rows["mail_feedback"] == 1 && rows["outbox_events"] == 1)
        #expect(try postgres.suppressions(emails: ["u0@example.com"])["u0@example.com"]?.reason == .hardBounce)
        // The copied rows' tallies, made by the PostgreSQL ledger's own triggers, agree with the rows and with SQLite's.
        #expect(try postgres.outboxCounts() == OutboxTallyTests.recount(postgres))
        #expect(try postgres.outboxCounts() == sqlite.outboxCounts())
        #expect(try postgres.report(campaign: campaign.id, now: now).total == 3)

        let copied = try postgres.messages()
        #expect(copied.filter { $0.campaignID == nil }.map(\.id) == ids)
        #expect(
            copied.map(\.state).sorted { $0.rawValue < $1.rawValue } == [.bounced, .cancelled, .queued, .queued, .sent, .sent, .sent, .sent])
        #expect(try postgres.attempts(outboxID: ids[0]).map(\.replyCode) == [250])
        #expect(try postgres.account(email: "GRACE@example.com")?.emailVerified == true)
        #expect(try postgres.code(code.plaintext)?.kind == .resetPassword)
        let next = try postgres.enqueue(Fixture.request(.verifyEmail, "new@example.com"), messageDomain: "x.test")
        #expect(next > ids.max() ?? 0)

        // A second copy would duplicate the ledger: refused, nothing written.
        let error = #expect(throws: HeraldError.self) { try postgres.copy(fromSQLite: scratch.path("old.sqlite")) }
        #expect(error?.code == .invalidConfiguration)
        #expect(try postgres.messages().count == 9)
    }

    /// Copied codes arrive redeemed and copied messages attempted, past the triggers that keep the rollups as
    /// things happen: the copy makes the rollups again, so reports and charts read the same on both.
    @Test func aCopiedLedgerKeepsItsCampaignReportsAndCharts() throws {
        let sqlite = try SQLiteStore(path: scratch.path("reports.sqlite"))
        let ledger = LedgerQueriesTests()
        let now = ledger.now
        let (campaign, _, _) = try ledger.ledgerWithACampaign(sqlite)

        let postgres = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "reports") as? PostgresStore)
        _ = try postgres.copy(fromSQLite: scratch.path("reports.sqlite"))
        let before = try sqlite.report(campaign: campaign.id, now: now)
        let after = try postgres.report(campaign: campaign.id, now: now)
        #expect(after.replyCodes == ["250": 1, "550": 1] && after.replyCodes == before.replyCodes)
        #expect(after.clicked == 1 && after.redeemed == 1 && after.sent == 1)
        #expect(after.timeToRedeem?.p50 == 90 && after.timeToRedeem == before.timeToRedeem)
        #expect(after.funnel == before.funnel)
        #expect(try postgres.sendActivity(since: now, bucketSeconds: 300) == sqlite.sendActivity(since: now, bucketSeconds: 300))
        #expect(try postgres.linkActivity(since: now, bucketSeconds: 300) == sqlite.linkActivity(since: now, bucketSeconds: 300))
        try OutboxTallyTests().expectRollupAgreement(postgres, "the copy")
    }

    @Test func aSQLiteColumnThePostgreSQLLedgerLacksStopsTheCopyBeforeAnythingIsLost() throws {
        let path = scratch.path("newer.sqlite")
        let sqlite = try SQLiteStore(path: path)
        _ = try sqlite.enqueue(Fixture.request(.verifyEmail, "u@example.com"), messageDomain: "x.test")
        try DatabaseQueue(path: path).write { try $0.execute(sql: "ALTER TABLE outbox ADD COLUMN priority_hint TEXT") }
        let postgres = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "newer") as? PostgresStore)
        let error = #expect(throws: HeraldError.self) { try postgres.copy(fromSQLite: path) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.detail.contains("outbox has columns") == true && error?.detail.contains("priority_hint") == true)
        #expect(try postgres.messages().isEmpty)
    }

    @Test func mailQueuedThroughOneStoreWakesTheListenersOfAnother() async throws {
        let listener = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "notify") as? PostgresStore)
        let queuer = try StoreKind.postgres.makeStore(in: scratch, name: "notify")
        let signal = QueueSignal()
        let wakes = Counter()
        _ = signal.observe { wakes.add() }
        let relay = listener.relayQueueNotifications(to: signal)
        defer { relay.cancel() }
        // The relay signals once when it starts listening.
        try await Self.waitUntil { wakes.value >= 1 }
        let before = wakes.value
        try queuer.enqueue(Fixture.request(.verifyEmail, "wake@example.com"), messageDomain: Fixture.messageDomain)
        try await Self.waitUntil { wakes.value > before }
        let afterOne = wakes.value
        _ = try queuer.enqueue(
            (1...50).map { try Fixture.request(.verifyEmail, "bulk\($0)@example.com") }, messageDomain: Fixture.messageDomain, batchSize: 50,
            now: Date())
        try await Self.waitUntil { wakes.value > afterOne }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else {
                Issue.record("not within 10 s")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func rateSlotsFromTwoStoresInterleaveWithoutOverlap() throws {
        let first = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "slots") as? PostgresStore)
        let second = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "slots") as? PostgresStore)
        let now = Date(milliseconds: Date().milliseconds)
        let began = Date()
        let a = try first.reserveSendSlots(10, interval: 0.01, key: "k", now: now)
        let b = try second.reserveSendSlots(10, interval: 0.01, key: "k", now: now)
        let elapsed = Int64((Date().timeIntervalSince(began) * 1000).rounded(.up))
        let c = try first.reserveSendSlots(1, interval: 0.01, key: "other", now: now)
        #expect(a.milliseconds == now.milliseconds)
        // By the ledger's clock, which moved on between the two reservations: the start comes back as a distance from `now`.
        let ahead = b.milliseconds - now.milliseconds
        #expect(ahead <= 100 && ahead >= 100 - elapsed - 1, "the second block starts where the first ends (\(ahead) ms ahead)")
        #expect(c.milliseconds == now.milliseconds, "keys are independent")
    }
}

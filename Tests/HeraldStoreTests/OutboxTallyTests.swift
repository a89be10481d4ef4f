import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The outbox tallies (migration v29) that the metrics, the overview and the campaign lists read instead of counting
/// the outbox: after random workloads, and after transactions that fail half-way, they equal a full recount, on both
/// engines (PostgreSQL's deltas folded at random points, and not folded).
@Suite struct OutboxTallyTests {
    let scratch = ScratchDirectory()

    /// `outbox`'s rows counted one by one, as `outboxCounts` reported them before the tallies.
    static func recount(_ store: any HeraldStore) throws -> [OutboxCount] {
        func count<Engine: LedgerEngine>(_ engine: Engine) throws -> [OutboxCount] {
            try engine.read { db in
                try db.rows("SELECT state, action, campaign_id, COUNT(*) AS n FROM outbox GROUP BY state, action, campaign_id")
                    .map { row in
                        OutboxCount(
                            state: OutboxState(rawValue: row["state"])!, kind: ActionKind(rawValue: row["action"])!,
                            campaignID: row["campaign_id"], count: row["n"])
                    }
            }
        }
        let counts = try (store as? SQLiteStore).map(count) ?? count(try #require(store as? PostgresStore))
        return counts.sorted { ($0.state.rawValue, $0.kind.rawValue, $0.campaignID ?? 0) < ($1.state.rawValue, $1.kind.rawValue, $1.campaignID ?? 0) }
    }

    /// Deletes a row and moves every waiting row to `sending` in a transaction that then fails, as a process killed
    /// mid-batch leaves it.
    static func failHalfway(_ store: any HeraldStore) throws {
        struct Crash: Error {}
        func crash<Engine: LedgerEngine>(_ engine: Engine) throws {
            do {
                try engine.write { db in
                    _ = try db.execute(
                        """
                        DELETE FROM outbox WHERE id IN (
                            SELECT id FROM outbox WHERE state = 'queued' AND id NOT IN (SELECT outbox_id FROM action_codes) LIMIT 1)
                        """, [])
                    _ = try db.execute("UPDATE outbox SET state = 'sending' WHERE state IN ('queued', 'deferred')", [])
                    throw Crash()
                }
            } catch is Crash {}
        }
        if let sqlite = store as? SQLiteStore { try crash(sqlite) } else { try crash(try #require(store as? PostgresStore)) }
    }

    func expectAgreement(_ store: any HeraldStore, _ step: String) throws {
        let tallies = try store.outboxCounts()
        let recount = try Self.recount(store)
        #expect(tallies == recount, "after \(step)")
        var byState: [OutboxState: Int] = [:]
        for count in recount { byState[count.state, default: 0] += count.count }
        #expect(try store.stateCounts() == byState, "state counts after \(step)")
        let pending = [OutboxState.queued, .deferred, .sending].reduce(0) { $0 + (byState[$1] ?? 0) }
        #expect(try store.queueStatus().pending == pending, "pending after \(step)")
    }

    @Test(arguments: StoreKind.allCases)
    func talliesEqualARecountAfterRandomWorkloadsAndFailedTransactions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var random = SplitMix64(seed: 29)
        let policy = Fixture.policy { $0.worker.batchSize = 7 }
        var now = Date(milliseconds: Date().milliseconds)
        var campaigns: [Campaign] = []
        var claimed: [ClaimedMessage] = []
        var serial = 0
        func address() -> String {
            serial += 1
            return "t\(serial)@example.com"
        }
        for step in 0..<60 {
            now = now.addingTimeInterval(1)
            let choice = Int.random(in: 0..<10, using: &random)
            let what: String
            switch choice {
            case 0, 1:
                let kinds: [ActionKind] = [.verifyEmail, .resetPassword, .signIn]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    _ = try store.enqueue(
                        Fixture.request(kinds.randomElement(using: &random)!, address()), messageDomain: Fixture.messageDomain, throttle: nil,
                        now: now)
                }
                what = "enqueue"
            case 2:
                let campaign = try Fixture.campaign("c\(step)", now: now, in: store)
                campaigns.append(campaign)
                _ = try Fixture.add((0..<Int.random(in: 1...6, using: &random)).map { _ in address() }, to: campaign, now: now, in: store)
                what = "campaign import"
            case 3, 4:
                claimed += try store.claim(policy, now: now)
                what = "claim"
            case 5, 6:
                claimed.shuffle(using: &random)
                let taken = claimed.prefix(Int.random(in: 0...4, using: &random))
                claimed.removeFirst(taken.count)
                for message in taken {
                    let record: DeliveryRecord =
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: Fixture.failed(at: now)
                        case 1: Fixture.deferred(until: now, at: now)
                        default: Fixture.sent(at: now)
                        }
                    try store.record(message, record, policy: policy)
                }
                what = "record"
            case 7:
                _ = try store.retry(RequeueFilter(states: [.failed], all: true), actor: "test", dryRun: false, now: now)
                what = "retry"
            case 8:
                if let campaign = campaigns.randomElement(using: &random) {
                    _ = try? store.cancel(campaign: campaign.id, now: now)
                }
                _ = try store.cancel(RequeueFilter(states: [.deferred], all: true), actor: "test", dryRun: false, now: now)
                what = "cancel"
            default:
                try Self.failHalfway(store)
                what = "a transaction that failed half-way"
            }
            if kind == .postgres, Bool.random(using: &random) { try store.foldTallies() }
            try expectAgreement(store, "step \(step): \(what)")
        }
        try store.release(claimed)
        try expectAgreement(store, "release")
        try store.foldTallies()
        try expectAgreement(store, "the last fold")
        for campaign in campaigns {
            let recount = try Self.recount(store).filter { $0.campaignID == campaign.id }
            var byState: [OutboxState: Int] = [:]
            for count in recount { byState[count.state, default: 0] += count.count }
            #expect(try store.counts(campaign: campaign.id) == byState, "campaign \(campaign.id)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aLedgerMigratedWithRowsStartsWithTheirTallies(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        for index in 0..<5 {
            _ = try store.enqueue(Fixture.request(.resetPassword, "m\(index)@example.com"), messageDomain: Fixture.messageDomain)
        }
        // The tallies as v29 found them: dropped and made again from the rows, as the migration does.
        func rebuild<Engine: LedgerEngine>(_ engine: Engine) throws {
            try engine.write { db in
                _ = try db.execute("DELETE FROM outbox_tallies", [])
                if kind == .postgres { _ = try db.execute("DELETE FROM outbox_tally_deltas", []) }
                let backfill = try #require(LedgerMigration.all.last.flatMap { kind == .postgres ? $0.postgres : $0.sqlite })
                let insert = try #require(backfill.statements.first { $0.contains("INSERT INTO outbox_tallies") })
                _ = try db.execute(insert, [])
            }
        }
        if let sqlite = store as? SQLiteStore { try rebuild(sqlite) } else { try rebuild(try #require(store as? PostgresStore)) }
        #expect(try store.stateCounts() == [.queued: 5])
        try expectAgreement(store, "the backfill")
    }
}

import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The outbox tallies (migration v29) that the metrics, the overview and the campaign lists read instead of counting
/// the outbox, and the rollups (v30) the overview's charts, the live rates and the reports read instead of the
/// attempts, link events and codes: after random workloads, and after transactions that fail half-way, they equal a
/// full recount, on both engines (PostgreSQL's deltas folded at random points, and not folded).
@Suite struct OutboxTallyTests {
    let scratch = ScratchDirectory()
    static let visitor = Visitor(ip: "192.0.2.1", userAgent: "tests")

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
                    _ = try db.execute(
                        """
                        INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_code)
                        SELECT id, 1, queued_at, queued_at, 'sent', 250 FROM outbox WHERE campaign_id IS NOT NULL
                        """, [])
                    _ = try db.execute("UPDATE outbox SET attempts = attempts + 1, last_reply_code = 421 WHERE campaign_id IS NOT NULL", [])
                    _ = try db.execute("INSERT INTO link_events (code_id, kind, at) SELECT id, 'click', created_at FROM action_codes", [])
                    _ = try db.execute("UPDATE action_codes SET redeemed_at = created_at WHERE redeemed_at IS NULL", [])
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
        try expectRollupAgreement(store, step)
    }

    /// What the rollups' readers answer, against the queries they replaced.
    func expectRollupAgreement(_ store: any HeraldStore, _ step: String) throws {
        let recount = try RollupRecount(store)
        let epoch = Date(milliseconds: 0)
        let sends = try store.sendActivity(since: epoch, bucketSeconds: 60)
        #expect(
            Set(sends.map { "\($0.bucket.milliseconds) \($0.outcome) \($0.replyClass) \($0.count)" }) == recount.attempts, "attempts after \(step)")
        let links = try store.linkActivity(since: epoch, bucketSeconds: 60)
        #expect(Set(links.map { "\($0.bucket.milliseconds) \($0.kind) \($0.count)" }) == recount.links, "link events after \(step)")
        #expect(try store.campaignSends(since: recount.lastMinute) == recount.campaignSends, "campaign sends after \(step)")
        for campaign in recount.campaigns {
            let report = try store.report(campaign: campaign, now: recount.lastMinute)
            let expected = try #require(recount.reports[campaign])
            #expect(report.replyCodes == expected.replyCodes, "campaign \(campaign)'s replies after \(step)")
            #expect(report.clicked == expected.clicked, "campaign \(campaign)'s clicks after \(step)")
            #expect(report.redeemed == expected.redeemed, "campaign \(campaign)'s redemptions after \(step)")
            #expect(report.timeToRedeem == expected.timeToRedeem, "campaign \(campaign)'s time to redeem after \(step)")
            #expect(report.funnel.reduce(0) { $0 + $1.sent } == expected.sent, "campaign \(campaign)'s funnel after \(step)")
            #expect(report.funnel.reduce(0) { $0 + $1.redeemed } == expected.redeemed, "campaign \(campaign)'s funnel after \(step)")
            #expect(report.feedback == expected.feedback, "campaign \(campaign)'s feedback after \(step)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func talliesEqualARecountAfterRandomWorkloadsAndFailedTransactions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var random = SplitMix64(seed: 29)
        let policy = Fixture.policy { $0.worker.batchSize = 7 }
        var now = Date(milliseconds: Date().milliseconds)
        var campaigns: [Campaign] = []
        var claimed: [ClaimedMessage] = []
        var recorded: [ClaimedMessage] = []
        var serial = 0
        func address() -> String {
            serial += 1
            return "t\(serial)@example.com"
        }
        for step in 0..<80 {
            now = now.addingTimeInterval(1)
            let choice = Int.random(in: 0..<12, using: &random)
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
                    if record.outcome == "sent" { recorded.append(message) }
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
            case 9, 10:
                // Mostly campaign mail: the reports' rollups count only theirs.
                let campaignMail = recorded.filter { $0.message.campaignID != nil }
                let pool = campaignMail.isEmpty || Int.random(in: 0..<4, using: &random) == 0 ? recorded : campaignMail
                for message in pool.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)) {
                    let later = now.addingTimeInterval(Double(Int.random(in: 0...5000, using: &random)) / 1000)
                    if let code = try store.code(message.code.plaintext) {
                        try store.recordLinkEvent(codeID: code.id, kind: .click, visitor: Self.visitor, detail: nil, now: later)
                    }
                    if Int.random(in: 0..<3, using: &random) == 0 {
                        let kind = MailFeedback.Kind.allCases.randomElement(using: &random)!
                        let status = ["5.1.1", "4.2.2", "5.7.1", nil].randomElement(using: &random)!
                        _ = try store.recordFeedback(
                            MailFeedback(outboxID: message.message.id, kind: kind, status: status, diagnostic: "test"), softLimit: 3,
                            softWindow: 86_400, now: later)
                    }
                    if Bool.random(using: &random) {
                        // A second redemption of one message is refused, and counts nothing.
                        _ = try? store.consume(message.code.plaintext, expecting: Set(ActionKind.allCases), visitor: Self.visitor, now: later)
                    }
                }
                what = "clicks and redemptions"
            default:
                try Self.failHalfway(store)
                what = "a transaction that failed half-way"
            }
            if kind == .postgres, Bool.random(using: &random) { try store.foldTallies() }
            try expectAgreement(store, "step \(step): \(what)")
        }
        // A tail that surely reaches the campaigns' rollups: what is claimable sent, its campaign mail clicked, every
        // other one redeemed, and bounced or complained of.
        claimed += try store.claim(Fixture.policy { $0.worker.batchSize = 500 }, now: now)
        for (index, message) in claimed.enumerated() {
            try store.record(message, Fixture.sent(at: now), policy: policy)
            guard message.message.campaignID != nil, let code = try store.code(message.code.plaintext) else { continue }
            try store.recordLinkEvent(codeID: code.id, kind: .click, visitor: Self.visitor, detail: nil, now: now)
            if index.isMultiple(of: 2) {
                _ = try store.consume(
                    message.code.plaintext, expecting: Set(ActionKind.allCases), visitor: Self.visitor,
                    now: now.addingTimeInterval(Double(index) * 1.5))
            }
            // A soft bounce, then for some a hard one after it, and a complaint.
            let feedback: [(MailFeedback.Kind, String?)] = [(.soft, "4.2.2"), (.hard, "5.1.1"), (.complaint, nil)]
            for (kind, status) in feedback.prefix(1 + index % 3) {
                _ = try store.recordFeedback(
                    MailFeedback(outboxID: message.message.id, kind: kind, status: status, diagnostic: "test"), softLimit: 3,
                    softWindow: 86_400, now: now)
            }
        }
        claimed = []
        try expectAgreement(store, "the tail")
        let exercised = try RollupRecount(store).reports.values
        #expect(exercised.contains { $0.clicked > 0 } && exercised.contains { $0.timeToRedeem != nil }, "the workload clicked and redeemed")
        #expect(exercised.contains { $0.feedback.count > 1 }, "the workload's campaign mail had feedback of more than one kind")
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

    /// The per-minute rollups serve the overview's last day and go after two days; a campaign's stay with its report.
    @Test(arguments: StoreKind.allCases)
    func minuteRollupsArePrunedAfterTwoDaysWhileCampaignsKeepTheirs(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let then = Date(milliseconds: Date().milliseconds).addingTimeInterval(-3 * 86_400)
        let campaign = try Fixture.campaign("old", now: then, in: store)
        _ = try Fixture.add(["old@example.com"], to: campaign, now: then, in: store)
        let policy = Fixture.policy()
        let claimed = try store.claim(policy, now: then)
        try store.record(claimed[0], Fixture.sent(at: then), policy: policy)
        let recent = then.addingTimeInterval(2 * 86_400)
        _ = try store.enqueue(Fixture.request(.resetPassword, "new@example.com"), messageDomain: Fixture.messageDomain, throttle: nil, now: recent)
        try store.record(try store.claim(policy, now: recent)[0], Fixture.failed(at: recent), policy: policy)
        try store.foldTallies()
        #expect(try store.sendActivity(since: then, bucketSeconds: 60).map(\.outcome) == ["sent", "failed"])

        try store.pruneRollups(now: then.addingTimeInterval(3 * 86_400))
        #expect(try store.sendActivity(since: then, bucketSeconds: 60).map(\.outcome) == ["failed"])
        let report = try store.report(campaign: campaign.id, now: recent)
        #expect(report.funnel.reduce(0) { $0 + $1.sent } == 1)
        #expect(report.replyCodes == ["250": 1])
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
                let backfill = try #require(
                    LedgerMigration.all.compactMap { kind == .postgres ? $0.postgres : $0.sqlite }.first { $0.name == "v29: outbox tallies" })
                let insert = try #require(backfill.statements.first { $0.contains("INSERT INTO outbox_tallies") })
                _ = try db.execute(insert, [])
            }
        }
        if let sqlite = store as? SQLiteStore { try rebuild(sqlite) } else { try rebuild(try #require(store as? PostgresStore)) }
        #expect(try store.stateCounts() == [.queued: 5])
        try expectAgreement(store, "the backfill")
    }
}

/// The answers the rollups replaced, counted from the rows as the readers did before migration v30.
struct RollupRecount {
    struct Report {
        var replyCodes: [String: Int] = [:]
        var clicked = 0
        var redeemed = 0
        var sent = 0
        var timeToRedeem: CampaignReport.Percentiles?
        var feedback: [FeedbackCount] = []
    }
    var attempts: Set<String> = []
    var links: Set<String> = []
    var lastMinute = Date()
    var campaignSends: [Int64: Int] = [:]
    var campaigns: [Int64] = []
    var reports: [Int64: Report] = [:]

    init(_ store: any HeraldStore) throws {
        if let sqlite = store as? SQLiteStore { try count(sqlite) } else { try count(try #require(store as? PostgresStore)) }
    }

    /// Milliseconds rounded down to three significant digits, as the rollups keep delays.
    static func threeDigits(_ value: Int64) -> Int64 {
        var unit: Int64 = 1
        while value / unit >= 1000 { unit *= 10 }
        return value / unit * unit
    }

    private mutating func count<Engine: LedgerEngine>(_ engine: Engine) throws {
        try engine.read { db in
            for row in try db.rows(
                """
                SELECT finished_at / 60000 * 60000 AS minute, outcome,
                       CASE WHEN reply_code IS NULL THEN 'connection' ELSE CAST(reply_code / 100 AS TEXT) || 'xx' END AS class, COUNT(*) AS n
                FROM delivery_attempts GROUP BY 1, 2, 3
                """, [])
            {
                attempts.insert("\(row["minute"] as Int64) \(row["outcome"] as String) \(row["class"] as String) \(row["n"] as Int)")
            }
            for row in try db.rows(
                "SELECT at / 60000 * 60000 AS minute, kind, COUNT(*) AS n FROM link_events WHERE kind IN ('click','redeemed') GROUP BY 1, 2", [])
            {
                links.insert("\(row["minute"] as Int64) \(row["kind"] as String) \(row["n"] as Int)")
            }
            let last = try db.value("SELECT MAX(finished_at) FROM delivery_attempts", [], as: Int64.self) ?? 0
            lastMinute = Date(milliseconds: last - 30_500)
            let from = (lastMinute.milliseconds + 999) / 1000 * 1000
            for row in try db.rows(
                """
                SELECT o.campaign_id AS campaign, COUNT(*) AS n FROM delivery_attempts a JOIN outbox o ON o.id = a.outbox_id
                WHERE a.finished_at >= ? AND a.outcome = 'sent' AND o.campaign_id IS NOT NULL GROUP BY o.campaign_id
                """, [from])
            {
                campaignSends[row["campaign"] as Int64] = row["n"] as Int
            }
            campaigns = try db.column("SELECT id FROM campaigns ORDER BY id", [], as: Int64.self)
            for id in campaigns {
                var report = Report()
                for row in try db.rows(
                    """
                    SELECT COALESCE(CAST(last_reply_code AS TEXT), 'none') AS code, COUNT(*) AS n FROM outbox
                    WHERE campaign_id = ? AND attempts > 0 GROUP BY 1
                    """, [id])
                {
                    report.replyCodes[row["code"] as String] = row["n"] as Int
                }
                report.clicked =
                    try db.value(
                        """
                        SELECT COUNT(DISTINCT c.outbox_id) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                        JOIN outbox o ON o.id = c.outbox_id WHERE o.campaign_id = ? AND e.kind = 'click'
                        """, [id], as: Int.self) ?? 0
                report.redeemed =
                    try db.value(
                        """
                        SELECT COUNT(DISTINCT o.id) FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                        WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL
                        """, [id], as: Int.self) ?? 0
                report.sent = try db.value("SELECT COUNT(*) FROM outbox WHERE campaign_id = ? AND sent_at IS NOT NULL", [id], as: Int.self) ?? 0
                let delays = try db.column(
                    """
                    SELECT MIN(c.redeemed_at) - o.sent_at FROM action_codes c JOIN outbox o ON o.id = c.outbox_id
                    WHERE o.campaign_id = ? AND c.redeemed_at IS NOT NULL AND o.sent_at IS NOT NULL GROUP BY o.id, o.sent_at ORDER BY 1
                    """, [id], as: Int64.self
                ).map(Self.threeDigits)
                if !delays.isEmpty {
                    func rank(_ p: Double) -> Double {
                        Double(delays[min(delays.count - 1, max(0, Int((p * Double(delays.count)).rounded(.up)) - 1))]) / 1000
                    }
                    report.timeToRedeem = .init(p50: rank(0.5), p90: rank(0.9), p99: rank(0.99))
                }
                report.feedback = try db.rows(
                    """
                    SELECT kind, class, COUNT(*) AS n FROM (
                        SELECT f.kind, \(db.dialect.statusClass("f.status")) AS class,
                            ROW_NUMBER() OVER (PARTITION BY f.outbox_id, f.kind = 'complaint'
                                ORDER BY f.kind = 'hard' DESC, f.id DESC) AS latest
                        FROM mail_feedback f JOIN outbox o ON o.id = f.outbox_id
                        WHERE o.campaign_id = ? AND f.kind <> 'unsubscribe') AS feedback
                    WHERE latest = 1
                    GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST
                    """, [id]
                ).map { FeedbackCount(kind: MailFeedback.Kind(rawValue: $0["kind"])!, statusClass: $0["class"], count: $0["n"]) }
                reports[id] = report
            }
        }
    }
}

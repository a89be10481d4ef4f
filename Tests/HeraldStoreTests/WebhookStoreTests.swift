import Foundation
import GRDB
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The webhooks' outbox: deliveries written by the state changes themselves, claimed with a lease, recorded, replayed.
@Suite struct WebhookStoreTests {
    let scratch = ScratchDirectory()
    /// A second ahead, so rows queued during a test are due at it.
    let now = Date(milliseconds: Date().milliseconds + 1000)
    let everything = WebhookRouting(["ops": Set(WebhookEvent.allCases)])

    struct DeliveryRow {
        let id: Int64
        let event_id: String
        let endpoint: String
        let event: String
        let outbox_id: Int64?
        let payload: String
        let state: String
        let attempts: Int
    }

    func rows(_ kind: StoreKind) throws -> [DeliveryRow] {
        try kind.rows(in: scratch, "SELECT * FROM webhook_deliveries ORDER BY id").map { row in
            let text = { (name: String) in (row[name] ?? nil) ?? "" }
            return DeliveryRow(
                id: Int64(text("id")) ?? -1, event_id: text("event_id"), endpoint: text("endpoint"), event: text("event"),
                outbox_id: (row["outbox_id"] ?? nil).flatMap { Int64($0) }, payload: text("payload"), state: text("state"),
                attempts: Int(text("attempts")) ?? -1)
        }
    }

    func payload(_ row: DeliveryRow) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(row.payload.utf8)) as? [String: Any])
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordedSendWritesOneDeliveryPerListeningEndpoint(_ kind: StoreKind) throws {
        let routing = WebhookRouting(["crm": [.bounced], "ops": [.sent, .failed], "audit": Set(WebhookEvent.allCases)])
        let store = try kind.makeStore(in: scratch, webhooks: routing)
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(.resetPassword, "ada@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy, now: now)
        try store.record(claimed[0], Fixture.sent(at: now), policy: policy)
        let written = try rows(kind)
        #expect(written.map(\.endpoint) == ["audit", "ops"])
        #expect(Set(written.map(\.event_id)).count == 1, "one event, one id for every endpoint")
        let body = try payload(written[0])
        #expect(body["type"] as? String == "sent")
        #expect(body["id"] as? String == written[0].event_id)
        let message = try #require(body["message"] as? [String: Any])
        #expect(message["id"] as? String == "\(id)")
        #expect(message["action"] as? String == "reset-password")
        #expect(message["recipient"] as? String == "ada@example.com")
        #expect(message["state"] as? String == "sent")
        #expect((body["smtpReply"] as? [String: Any])?["code"] as? Int == 250)
        #expect(!written[0].payload.contains(claimed[0].code.plaintext), "never the code")
        #expect(written.allSatisfy { $0.state == "queued" && $0.outbox_id == id })
    }

    @Test(arguments: StoreKind.allCases)
    func nobodyListeningWritesNothingAndALateResultIsNoEvent(_ kind: StoreKind) throws {
        let quiet = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        try quiet.enqueue(Fixture.request(.verifyEmail, "a@example.com"), messageDomain: Fixture.messageDomain)
        try quiet.record(try quiet.claim(policy, now: now)[0], Fixture.sent(at: now), policy: policy)
        #expect(try rows(kind).isEmpty)

        let store = try kind.makeStore(in: scratch, webhooks: everything)
        try store.enqueue(Fixture.request(.verifyEmail, "b@example.com"), messageDomain: Fixture.messageDomain)
        let first = try store.claim(policy, now: now)[0]
        // The lease runs out and another worker takes the row: the first worker's late result moves nothing.
        let second = try store.claim(policy, owner: "other/0:1", now: now.addingTimeInterval(policy.lease + 1))[0]
        try store.record(first, Fixture.failed(at: now), policy: policy)
        #expect(try rows(kind).isEmpty)
        try store.record(second, Fixture.sent(at: now.addingTimeInterval(policy.lease + 2)), policy: policy)
        #expect(try rows(kind).map(\.event) == ["sent"])
    }

    @Test(arguments: StoreKind.allCases)
    func theDeliveryCommitsWithTheStateChangeOrNotAtAll(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch, webhooks: everything)
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(.verifyEmail, "a@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy, now: now)
        try kind.execute(
            in: scratch, sqlite: "CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END",
            postgres: """
                CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$
                ;
                CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse()
                """)
        #expect(throws: (any Error).self) { try store.record(claimed[0], Fixture.sent(at: now), policy: policy) }
        #expect(try store.messages().first { $0.id == id }?.state == .sending, "the send's record rolled back with its event")
    }

    @Test(arguments: StoreKind.allCases)
    func bouncesExpiriesAndRedemptionsAreEventsToo(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch, webhooks: everything)
        let policy = Fixture.policy()
        let sent = try store.enqueue(Fixture.request(.verifyEmail, "gone@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy, now: now)
        try store.record(claimed[0], Fixture.sent(at: now), policy: policy)
        _ = try store.recordFeedback(
            MailFeedback(outboxID: sent, kind: .hard, status: "5.1.1", diagnostic: "550 5.1.1 user unknown"), softLimit: 3, softWindow: 86_400,
            now: now)
        let bounced = try #require(try rows(kind).last)
        #expect(bounced.event == "bounced")
        #expect((try payload(bounced)["feedback"] as? [String: Any])?["status"] as? String == "5.1.1")

        try store.enqueue(Fixture.request(.resetPassword, "late@example.com"), messageDomain: Fixture.messageDomain)
        _ = try store.claim(policy, now: now.addingTimeInterval(3600))  // past worker.maxQueueWait
        #expect(try rows(kind).last?.event == "expired")

        try store.enqueue(Fixture.request(.verifyEmail, "ada@example.com"), messageDomain: Fixture.messageDomain)
        let verify = try store.claim(policy, now: now)[0]
        try store.record(verify, Fixture.sent(at: now), policy: policy)
        try store.recordLinkEvent(codeID: try store.code(verify.code.plaintext)?.id, kind: .click, visitor: Fixture.visitor, detail: nil, now: now)
        _ = try store.consume(verify.code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: now)
        let last = try rows(kind).suffix(2)
        #expect(last.map(\.event) == ["clicked", "redeemed"])
        let redeemed = try payload(try #require(last.last))
        #expect((redeemed["visitor"] as? [String: Any])?["ip"] as? String == "203.0.113.7")
        #expect((redeemed["link"] as? [String: Any])?["action"] as? String == "verify-email")
        #expect(!(try #require(last.last)).payload.contains(verify.code.plaintext))
    }

    /// `webhookSummaries` (rollups and indexes, migration v30) against the pass over every delivery it replaced.
    func expectSummariesMatchARecount(_ store: any HeraldStore, _ kind: StoreKind, _ step: String) throws {
        let recount = try kind.rows(
            in: scratch,
            """
            SELECT endpoint, COUNT(*) FILTER (WHERE state = 'queued') AS queued,
                COUNT(*) FILTER (WHERE state = 'delivered') AS delivered, COUNT(*) FILTER (WHERE state = 'dead') AS dead,
                MIN(created_at) FILTER (WHERE state = 'queued') AS oldest_queued, MAX(delivered_at) AS last_delivered,
                (SELECT w.last_error FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL
                    ORDER BY w.last_attempt_at DESC NULLS LAST, w.id DESC LIMIT 1) AS last_error,
                (SELECT MAX(w.last_attempt_at) FROM webhook_deliveries w WHERE w.endpoint = d.endpoint AND w.last_error IS NOT NULL)
                    AS last_error_at
            FROM webhook_deliveries d GROUP BY endpoint ORDER BY endpoint
            """)
        let summaries = try store.webhookSummaries()
        func text(_ date: Date?) -> String? { date.map { "\($0.milliseconds)" } }
        let expected = recount.map { row in
            ["endpoint", "queued", "delivered", "dead", "oldest_queued", "last_delivered", "last_error", "last_error_at"].map { row[$0] ?? nil }
        }
        let read = summaries.map { summary -> [String?] in
            [
                summary.endpoint, "\(summary.queued)", "\(summary.delivered)", "\(summary.dead)", text(summary.oldestQueuedAt),
                text(summary.lastDeliveredAt), summary.lastError, text(summary.lastErrorAt),
            ]
        }
        #expect(read == expected, "webhook summaries after \(step)")
    }

    @Test(arguments: StoreKind.allCases)
    func aClaimLeasesDeliveriesAndTheOutcomeDecidesWhatIsNext(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch, webhooks: everything)
        let policy = Fixture.policy()
        for email in ["a@example.com", "b@example.com", "c@example.com"] {
            try store.enqueue(Fixture.request(.verifyEmail, email), messageDomain: Fixture.messageDomain)
        }
        for claimed in try store.claim(policy, now: now) { try store.record(claimed, Fixture.sent(at: now), policy: policy) }
        let batch = try store.claimWebhookDeliveries(endpoint: "ops", limit: 10, lease: 60, now: now)
        #expect(batch.count == 3 && batch.allSatisfy { $0.attempts == 1 })
        #expect(try store.claimWebhookDeliveries(endpoint: "ops", limit: 10, lease: 60, now: now).isEmpty, "leased: no one else posts them")
        #expect(try store.claimWebhookDeliveries(endpoint: "other", limit: 10, lease: 60, now: now).isEmpty)

        try store.recordWebhookDelivery(batch[0], WebhookOutcome(decision: .delivered, status: 204, error: nil, at: now))
        let retry = now.addingTimeInterval(30)
        try store.recordWebhookDelivery(batch[1], WebhookOutcome(decision: .retry(at: retry), status: 500, error: "HTTP 500", at: now))
        try store.releaseWebhookDeliveries([batch[2]], next: retry)
        #expect(try store.claimWebhookDeliveries(endpoint: "ops", limit: 10, lease: 60, now: now.addingTimeInterval(29)).isEmpty)
        let again = try store.claimWebhookDeliveries(endpoint: "ops", limit: 10, lease: 60, now: retry)
        #expect(again.map(\.id) == [batch[1].id, batch[2].id])
        #expect(again.map(\.attempts) == [2, 1], "a delivery given back is not charged")
        try store.recordWebhookDelivery(again[0], WebhookOutcome(decision: .dead, status: 500, error: "HTTP 500", at: retry))

        let summary = try #require(try store.webhookSummaries().first)
        #expect((summary.endpoint, summary.queued, summary.delivered, summary.dead) == ("ops", 1, 1, 1))
        #expect(summary.lastError == "HTTP 500")
        try store.foldTallies()
        try expectSummariesMatchARecount(store, kind, "deliveries, a retry, a release and a dead one")
        let failures = try store.recentWebhookFailures(limit: 10)
        #expect(failures.map(\.id) == [batch[1].id], "only the failed delivery: not the delivered one, nor the one given back")
        let failure = try #require(failures.first)
        #expect(failure.state == .dead && failure.lastStatus == 500 && failure.lastError == "HTTP 500" && failure.attempts == 2)
        #expect(failure.endpoint == "ops" && abs((failure.lastAttemptAt ?? .distantPast).timeIntervalSince(retry)) < 0.001)

        #expect(try store.replayWebhookDeliveries(WebhookReplayFilter(state: .dead), now: retry) == 1)
        #expect(try store.replayWebhookDeliveries(WebhookReplayFilter(endpoint: "other"), now: retry) == 0)
        let replayed = try store.claimWebhookDeliveries(endpoint: "ops", limit: 10, lease: 60, now: retry)
        #expect(replayed.map(\.id) == [batch[1].id] && replayed[0].attempts == 1, "a replay starts a fresh attempt budget")
        try expectSummariesMatchARecount(store, kind, "a replay")
        // Retention deletes what is done (the delivered one), and the counts follow.
        #expect(try store.pruneEvents(before: retry.addingTimeInterval(3600)) >= 1)
        try expectSummariesMatchARecount(store, kind, "pruning")
        #expect(try store.webhookSummaries().map(\.delivered) == [0])
    }

    @Test func routingListsOnlyTheEndpointsThatAskedForAnEvent() {
        let routing = WebhookRouting(["crm": [.bounced], "ops": Set(WebhookEvent.allCases)])
        #expect(routing.endpoints(for: .bounced) == ["crm", "ops"])
        #expect(routing.endpoints(for: .sent) == ["ops"])
        #expect(!WebhookRouting.none.listens(to: .sent))
    }
}

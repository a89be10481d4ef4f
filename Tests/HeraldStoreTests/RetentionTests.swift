import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Synchronization
import Testing

/// Message retention (`ledger.messageRetention`): what a prune deletes, what it leaves alone, and what survives it.
@Suite struct RetentionTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    /// What the ledger says of a campaign: its counts and its whole report.
    func campaignView(_ store: any HeraldStore, _ id: Int64, at: Date) throws -> String {
        let report = try store.report(campaign: id, now: at)
        let counts = report.counts.map { "\($0.key.rawValue)=\($0.value)" }.sorted()
        return """
            counts \(counts) all \(try store.campaignCounts()[id] ?? [:] == report.counts) replies \(report.replyCodes.sorted { $0.key < $1.key }) \
            sent \(report.sent) clicked \(report.clicked) redeemed \(report.redeemed) p \(String(describing: report.timeToRedeem)) \
            funnel \(report.funnel) feedback \(report.feedback)
            """
    }

    @Test(arguments: StoreKind.allCases)
    func aPruneDeletesFinishedMessagesWithWhatTheyLeftAndKeepsWhatTheyAnswered(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 50 }
        let domain = Fixture.messageDomain
        let single = try store.enqueue(Fixture.request(.resetPassword, "a@example.com"), messageDomain: domain, throttle: nil, now: now)
        let finished = try Fixture.campaign("finished", now: now, in: store)
        try Fixture.add(["x1@example.com", "x2@example.com"], to: finished, now: now, in: store)
        let running = try Fixture.campaign("running", now: now, in: store)
        try Fixture.add(["y1@example.com"], to: running, now: now, in: store)
        // Links that work for 90 days keep their messages past a 30-day cutoff.
        let long = try Fixture.campaign("long", linkLifetime: 90 * 86_400, now: now, in: store)
        try Fixture.add(["z1@example.com"], to: long, now: now, in: store)
        let claimed = try store.claim(policy, now: now)
        #expect(claimed.count == 5)
        for message in claimed {
            // x2's final dot got no reply: possibly delivered, so its unsubscribe link may be in an inbox too.
            let outcome =
                message.message.recipient.value == "x2@example.com" ? Fixture.possiblyDelivered(retryAt: nil, at: now) : Fixture.sent(at: now)
            try store.record(message, outcome, policy: policy)
        }
        let code = { (id: Int64) in claimed.first { $0.message.id == id }!.code.plaintext }
        let ids = Dictionary(uniqueKeysWithValues: claimed.map { ($0.message.recipient.value, $0.message.id) })
        // A click, a redemption and a bounce for the finished campaign, so its report has something to keep.
        let x1Code = try #require(try store.code(code(ids["x1@example.com"]!)))
        try store.recordLinkEvent(codeID: x1Code.id, kind: .click, visitor: Fixture.visitor, detail: nil, now: now.addingTimeInterval(5))
        _ = try store.consume(code(ids["x1@example.com"]!), expecting: [.verifyEmail], visitor: Fixture.visitor, now: now.addingTimeInterval(9))
        _ = try store.recordFeedback(
            MailFeedback(outboxID: ids["x2@example.com"]!, kind: .soft, status: "4.2.2", diagnostic: "mailbox full"), softLimit: 3,
            softWindow: 86_400, now: now.addingTimeInterval(20))
        // Still to send: a second row of the running campaign, and a reset; then one queued after the cutoff.
        try Fixture.add(["y2@example.com"], to: running, now: now, in: store)
        let waiting = try store.enqueue(Fixture.request(.resetPassword, "b@example.com"), messageDomain: domain, throttle: nil, now: now)
        let newer = try store.enqueue(
            Fixture.request(.resetPassword, "c@example.com"), messageDomain: domain, throttle: nil, now: now.addingTimeInterval(31 * 86_400))
        let later = now.addingTimeInterval(60 * 86_400)
        let cutoff = now.addingTimeInterval(30 * 86_400)
        let before = try campaignView(store, finished.id, at: later)
        let metricsBefore = try store.outboxCounts().reduce(0) { $0 + $1.count }
        let statesBefore = try store.stateCounts()

        let step = try store.pruneMessages(before: cutoff, after: 0, limit: 500, now: later)
        #expect(step == MessagePrune(deleted: 3, next: nil), "the single sent reset and the finished campaign's two; stops at the newer")
        let left = Set(try store.messages().map(\.id))
        let y2 = try store.messages().filter { $0.recipient.value == "y2@example.com" }.map(\.id)
        #expect(left == Set([ids["y1@example.com"]!, ids["z1@example.com"]!, waiting, newer] + y2))
        #expect(try store.campaign(id: long.id).prunedAt == nil)
        #expect(!left.contains(single))
        #expect(try store.code(code(single)) == nil && store.code(code(ids["x1@example.com"]!)) == nil)
        #expect(try store.attempts(outboxID: single).isEmpty)

        // The campaign's counts and report are what they were; the outbox's own counts (the metrics) shrank.
        #expect(try campaignView(store, finished.id, at: later) == before)
        #expect(try store.outboxCounts().reduce(0) { $0 + $1.count } == metricsBefore - 3)
        #expect(try store.stateCounts() == statesBefore, "a worker's progress counts pruned rows in the state they left in")
        #expect(try store.campaign(id: finished.id).prunedAt == later)
        #expect(try store.campaign(id: running.id).prunedAt == nil)

        // Its import cannot run again: the rows that said who was mailed are gone.
        #expect(throws: HeraldError.self) { try Fixture.add(["x1@example.com", "x3@example.com"], to: finished, now: later, in: store) }
        #expect(try store.counts(campaign: finished.id).values.reduce(0, +) == 2, "x3 was not queued")

        // The newest pruned code's creation time is kept (the links answer "expired", not "invalid").
        let through = try #require(try store.prunedCodesThrough())
        let prunedCodes = claimed.filter { !left.contains($0.message.id) }.map(\.code.plaintext)
        #expect(prunedCodes.count == 3 && prunedCodes.allSatisfy { ActionCode.claimedCreation($0)! <= through })

        // Tombstones: the unsubscribe link and a late bounce still find the address.
        let x2 = ids["x2@example.com"]!
        #expect(try store.unsubscribeTarget(outboxID: x2)?.email == "x2@example.com")
        #expect(try store.unsubscribeTarget(outboxID: single) == nil, "transactional mail has no unsubscribe link")
        let unsubscribed = try store.recordUnsubscribe(outboxID: x2, now: later)
        #expect(unsubscribed?.suppressed?.email == "x2@example.com" && unsubscribed?.suppressed?.reason == .unsubscribe)
        let bounced = try store.recordFeedback(
            MailFeedback(outboxID: ids["x1@example.com"]!, kind: .hard, status: "5.1.1", diagnostic: "no such user"), softLimit: 3,
            softWindow: 86_400, now: later)
        #expect(bounced?.suppressed?.email == "x1@example.com" && bounced?.suppressed?.reason == .hardBounce)
        #expect(try campaignView(store, finished.id, at: later) == before, "feedback on pruned mail changes no report")

        // Nothing more is old enough.
        #expect(try store.pruneMessages(before: cutoff, after: 0, limit: 500, now: later).deleted == 0)
    }

    /// A sweep walks the ledger a batch at a time, each step after the last id the one before looked at, and ends at
    /// the first message queued after the cutoff.
    @Test(arguments: StoreKind.allCases)
    func aSweepStepsThroughTheLedgerAndEndsAtTheNewerMessages(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 50 }
        let domain = Fixture.messageDomain
        for index in 0..<5 {
            _ = try store.enqueue(Fixture.request(.verifyEmail, "old\(index)@example.com"), messageDomain: domain, throttle: nil, now: now)
        }
        for message in try store.claim(policy, now: now) { try store.record(message, Fixture.failed(at: now), policy: policy) }
        let newer = try store.enqueue(
            Fixture.request(.verifyEmail, "new@example.com"), messageDomain: domain, throttle: nil, now: now.addingTimeInterval(31 * 86_400))
        let cutoff = now.addingTimeInterval(30 * 86_400)
        var steps: [MessagePrune] = []
        var after: Int64? = 0
        while let from = after {
            let step = try store.pruneMessages(before: cutoff, after: from, limit: 2, now: cutoff)
            steps.append(step)
            after = step.next
        }
        #expect(steps.map(\.deleted) == [2, 2, 1])
        #expect(try store.messages().map(\.id) == [newer])
    }

    /// With an archive (`ledger.archive`), a prune hands it the audit rows of the messages it chose, as the audit read
    /// them, before deleting them; an archive that fails deletes nothing; a message that changes while it is being
    /// archived (here: one retried, one bounced without a change of state) is archived and kept.
    @Test(arguments: StoreKind.allCases)
    func anArchivedPruneHandsOverTheAuditRowsOfWhatItDeletesAndAFailedArchiveDeletesNothing(_ kind: StoreKind) throws {
        struct Refused: Error {}
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 50 }
        for address in ["p1@example.com", "p2@example.com", "p3@example.com"] {
            _ = try store.enqueue(Fixture.request(.verifyEmail, address), messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        }
        let claimed = try store.claim(policy, now: now)
        for message in claimed.dropLast() { try store.record(message, Fixture.sent(at: now), policy: policy) }
        let failed = try #require(claimed.last).message.id
        let bounced = claimed[1].message.id
        try store.record(try #require(claimed.last), Fixture.failed(at: now), policy: policy)
        let clicked = try #require(try store.code(claimed[0].code.plaintext))
        try store.recordLinkEvent(codeID: clicked.id, kind: .click, visitor: Fixture.visitor, detail: nil, now: now.addingTimeInterval(5))
        _ = try store.consume(claimed[0].code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: now.addingTimeInterval(9))
        let later = now.addingTimeInterval(60 * 86_400)
        let cutoff = now.addingTimeInterval(30 * 86_400)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var audited: [Int64: Data] = [:]
        try store.audit(AuditFilter(), now: later) { audited[$0.id] = try encoder.encode($0) }
        #expect(audited.count == 3)

        #expect(throws: Refused.self) { try store.pruneMessages(before: cutoff, after: 0, limit: 500, now: later) { _ in throw Refused() } }
        #expect(try store.messages().count == 3, "an archive that fails deletes nothing")
        #expect(try store.prunedCodesThrough() == nil)

        let archived = Mutex<[AuditRow]>([])
        let step = try store.pruneMessages(before: cutoff, after: 0, limit: 500, now: later) { rows in
            archived.withLock { $0 += rows }
            _ = try store.retry(RequeueFilter(states: [.failed], ids: [failed]), actor: "test", dryRun: false, now: later)
            // A soft bounce on sent mail changes no state: only its audit row tells.
            _ = try store.recordFeedback(
                MailFeedback(outboxID: bounced, kind: .soft, status: "4.2.2", diagnostic: "mailbox full"), softLimit: 5, softWindow: 86_400,
                now: later)
        }
        #expect(step.deleted == 1)
        #expect(Set(try store.messages().map(\.id)) == [failed, bounced], "changed while they were archived: kept")
        let rows = archived.withLock { $0 }
        #expect(rows.map(\.id).sorted() == audited.keys.sorted())
        for row in rows { #expect(try encoder.encode(row) == audited[row.id], "message \(row.id) as the audit read it") }
        let redeemed = try #require(rows.first { $0.id == claimed[0].message.id })
        #expect(redeemed.redeemedAt != nil && redeemed.firstClickAt != nil && redeemed.smtpReply != nil)
    }

    /// One worker at a time holds the lease on the message sweep: until it runs out, or the holder gives it up.
    @Test(arguments: StoreKind.allCases)
    func theMessageSweepIsLeasedToOneWorkerAtATime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        #expect(try store.leaseMessageSweep(worker: "a", now: now, ttl: 30))
        #expect(try !store.leaseMessageSweep(worker: "b", now: now.addingTimeInterval(1), ttl: 30))
        #expect(try store.leaseMessageSweep(worker: "a", now: now.addingTimeInterval(20), ttl: 30), "renewed")
        #expect(try !store.leaseMessageSweep(worker: "b", now: now.addingTimeInterval(49), ttl: 30), "a's renewal runs to 50 s")
        #expect(try store.leaseMessageSweep(worker: "b", now: now.addingTimeInterval(51), ttl: 30), "a's ran out")
        #expect(try !store.leaseMessageSweep(worker: "a", now: now.addingTimeInterval(52), ttl: 30))
        try store.releaseMessageSweep(worker: "b")
        #expect(try store.leaseMessageSweep(worker: "a", now: now.addingTimeInterval(53), ttl: 30), "b gave it up")
        #expect(try store.prunedCodesThrough() == nil, "the lease is not the pruned-codes mark")
    }
}

import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The worker's side of the outbox: claim → record | release, leases and queue-wait expiry.
@Suite struct ClaimTests {
    let scratch = ScratchDirectory()

    @Test(arguments: StoreKind.allCases)
    func claimTakesDueRowsInQueueOrderUpToTheLimit(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 2 }
        let ids = try (0..<3).map { try store.enqueue(Fixture.request(.verifyEmail, "u\($0)@example.com"), messageDomain: Fixture.messageDomain) }
        let first = try store.claim(policy)
        #expect(first.map(\.message.id) == Array(ids.prefix(2)))
        #expect(first.allSatisfy { $0.message.state == .sending && $0.message.attempts == 1 })
        #expect(try store.claim(policy).map(\.message.id) == [ids[2]])
        #expect(try store.claim(policy).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func eachClaimedRowNamesItsOwnCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        // 85 rows: one claim inserts its codes in statements of 64, 16, 4 and 1 rows (SQLite).
        let policy = Fixture.policy { $0.worker.batchSize = 85 }
        let requests = try (0..<85).map { try Fixture.request(.verifyEmail, "u\($0)@example.com") }
        #expect(try store.enqueue(requests, messageDomain: Fixture.messageDomain, batchSize: 100, now: Date()) == 85)
        let claimed = try store.claim(policy)
        #expect(claimed.count == 85)
        for row in claimed {
            let code = try #require(try store.code(row.code.plaintext))
            #expect(code.id == row.codeID)
            #expect(code.outboxID == row.message.id)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deferredRowIsNotClaimedBeforeItsNextAttempt(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        let claimed = try store.claim(policy, now: now)
        let retryAt = now.addingTimeInterval(60)
        try store.record(claimed[0], Fixture.deferred(until: retryAt, at: now), policy: policy)
        let row = try #require(try store.messages().first)
        #expect(row.state == .deferred)
        #expect(row.nextAttemptAt.milliseconds == retryAt.milliseconds)
        #expect(try store.claim(policy, now: now.addingTimeInterval(59)).isEmpty)
        let later = try store.claim(policy, now: retryAt.addingTimeInterval(1))
        #expect(later.map(\.message.id) == [id])
        #expect(later[0].message.attempts == 2)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["deferred"])
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentClaimsNeverShareARow(_ kind: StoreKind) async throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.batchSize = 7 }
        let requests = try (0..<300).map { try Fixture.request(.verifyEmail, "u\($0)@example.com") }
        #expect(try store.enqueue(requests, messageDomain: Fixture.messageDomain, batchSize: 100, now: Date()) == 300)
        let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for _ in 0..<6 {
                group.addTask {
                    var ids: [Int64] = []
                    while case let batch = try store.claim(policy), !batch.isEmpty { ids += batch.map(\.message.id) }
                    return ids
                }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        #expect(claimed.count == 300)
        #expect(Set(claimed).count == 300)
    }

    @Test(arguments: StoreKind.allCases)
    func expiredLeaseReturnsTheRowToTheQueueAndRecordsTheInterruption(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.lease = 5 }
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        #expect(try store.claim(policy, now: now).count == 1)
        #expect(try store.claim(policy, now: now.addingTimeInterval(4)).isEmpty)
        let again = try store.claim(policy, now: now.addingTimeInterval(6))
        #expect(again.map(\.message.id) == [id])
        #expect(again[0].message.attempts == 2)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["interrupted"])
    }

    @Test(arguments: StoreKind.allCases)
    func expiredLeaseWithNoAttemptsLeftIsDead(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy {
            $0.worker.lease = 5
            $0.worker.maxAttempts = 1
        }
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        #expect(try store.claim(policy, now: now).count == 1)
        #expect(try store.claim(policy, now: now.addingTimeInterval(6)).isEmpty)
        #expect(try store.messages().first { $0.id == id }?.state == .dead)
    }

    @Test(arguments: StoreKind.allCases)
    func staleSignInAndResetMailExpiresButVerificationWaits(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.maxQueueWait = [.signIn: 60, .resetPassword: 60] }
        let queuedAt = Date()
        let signIn = try store.enqueue(Fixture.request(.signIn), messageDomain: Fixture.messageDomain, throttle: nil, now: queuedAt)
        let reset = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain, throttle: nil, now: queuedAt)
        let verify = try store.enqueue(Fixture.request(.verifyEmail), messageDomain: Fixture.messageDomain, throttle: nil, now: queuedAt)
        let claimed = try store.claim(policy, now: queuedAt.addingTimeInterval(61))
        #expect(claimed.map(\.message.id) == [verify])
        let states = Dictionary(uniqueKeysWithValues: try store.messages().map { ($0.id, $0.state) })
        #expect(states[signIn] == .expired)
        #expect(states[reset] == .expired)
    }

    @Test(arguments: StoreKind.allCases)
    func sentCodeLivesFromSendTime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.links.lifetime[.resetPassword] = 3600 }
        let id = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain)
        let claimedAt = Date()
        let claimed = try store.claim(policy, now: claimedAt)[0]
        let sentAt = claimedAt.addingTimeInterval(30)
        try store.record(claimed, Fixture.sent(at: sentAt), policy: policy)
        let code = try #require(try store.code(claimed.code.plaintext))
        #expect(code.outboxID == id)
        #expect(code.kind == .resetPassword)
        #expect(code.expiresAt.milliseconds == sentAt.milliseconds + 3_600_000)
        let row = try #require(try store.messages().first)
        #expect(row.state == .sent)
        #expect(row.sentAt?.milliseconds == sentAt.milliseconds)
        #expect(row.lastReplyCode == 250)
        #expect(row.lastReply == "250 2.0.0 Ok: queued")
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["sent"])
    }

    @Test(arguments: StoreKind.allCases)
    func failedAndDeadRowsKeepTheirReplyAndVoidTheirCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let failedID = try store.enqueue(Fixture.request(.verifyEmail, "a@example.com"), messageDomain: Fixture.messageDomain)
        let deadID = try store.enqueue(Fixture.request(.verifyEmail, "b@example.com"), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy)
        try store.record(claimed[0], Fixture.failed(), policy: policy)
        try store.record(claimed[1], Fixture.dead(), policy: policy)
        let rows = Dictionary(uniqueKeysWithValues: try store.messages().map { ($0.id, $0) })
        #expect(rows[failedID]?.state == .failed)
        #expect(rows[failedID]?.lastReply == "550 5.1.1 No such user")
        #expect(rows[failedID]?.lastReplyCode == 550)
        #expect(rows[deadID]?.state == .dead)
        #expect(try store.attempts(outboxID: failedID).map(\.outcome) == ["failed"])
        #expect(try store.attempts(outboxID: deadID).map(\.outcome) == ["dead"])
        for item in claimed {
            let error = #expect(throws: HeraldError.self) {
                try store.consume(item.code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
            }
            #expect(error?.code == .expiredOOBCode)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func possiblyDeliveredAttemptsAreChargedCountedAndTheirCodesLiveOn(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch, webhooks: WebhookRouting(["ops": Set(WebhookEvent.allCases)]))
        let policy = Fixture.policy { $0.links.lifetime[.resetPassword] = 3600 }
        let id = try store.enqueue(Fixture.request(.resetPassword), messageDomain: Fixture.messageDomain)
        let now = Date()
        // The first copy may have arrived: the row goes again at the message's backoff, charged.
        let first = try store.claim(policy, now: now)[0]
        let retryAt = now.addingTimeInterval(30)
        try store.record(first, Fixture.possiblyDelivered(retryAt: retryAt, at: now), policy: policy)
        var row = try #require(try store.messages().first)
        #expect(row.state == .deferred)
        #expect(row.attempts == 1)
        #expect(row.possiblyDelivered == 1)
        #expect(row.nextAttemptAt.milliseconds == retryAt.milliseconds)
        #expect(row.lastReplyCode == nil)
        #expect(row.lastReply?.hasPrefix("possibly delivered: ") == true)
        #expect(try store.claim(policy, now: now.addingTimeInterval(29)).isEmpty)
        // Out of resends: it ends possibly delivered, and says so to the webhooks.
        let second = try store.claim(policy, now: retryAt)[0]
        #expect(second.message.possiblyDelivered == 1)
        let later = retryAt.addingTimeInterval(1)
        try store.record(second, Fixture.possiblyDelivered(retryAt: nil, at: later), policy: policy)
        row = try #require(try store.messages().first)
        #expect(row.state == .possiblyDelivered)
        #expect(row.attempts == 2)
        #expect(row.possiblyDelivered == 2)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["possibly-delivered", "possibly-delivered"])
        #expect(try store.claim(policy, now: later.addingTimeInterval(3600)).isEmpty, "never sent again")
        #expect(try store.stateCounts() == [.possiblyDelivered: 1])
        #expect(try kind.rows(in: scratch, "SELECT event FROM webhook_deliveries").map { $0["event"] ?? nil } == ["possibly-delivered"])
        // Either email may be the one that arrived: both links work, for a sent link's lifetime.
        #expect(try store.code(first.code.plaintext)?.expiresAt.milliseconds == now.milliseconds + 3_600_000)
        #expect(try store.code(second.code.plaintext)?.expiresAt.milliseconds == later.milliseconds + 3_600_000)
        // An operator may still send it again, by name: a fresh budget, of attempts and of resends.
        let retried = try store.retry(RequeueFilter(states: [.possiblyDelivered], all: true), actor: "test", dryRun: false, now: later)
        #expect(retried.ids == [id] && retried.count == 1)
        row = try #require(try store.messages().first)
        #expect((row.state, row.attempts, row.possiblyDelivered) == (.queued, 0, 0))
    }

    @Test(arguments: StoreKind.allCases)
    func lateResultAfterTheLeaseWasTakenDoesNotOverwriteTheNewOwner(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.lease = 5 }
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        let first = try store.claim(policy, now: now)[0]
        let second = try store.claim(policy, now: now.addingTimeInterval(6))[0]
        try store.record(second, Fixture.sent(at: now.addingTimeInterval(7)), policy: policy)
        try store.record(first, Fixture.failed(at: now.addingTimeInterval(8), reply: "550 late"), policy: policy)
        let row = try #require(try store.messages().first { $0.id == id })
        #expect(row.state == .sent)
        #expect(row.lastReplyCode == 250)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["interrupted", "sent", "failed"])
    }

    @Test(arguments: StoreKind.allCases)
    func releaseReturnsUnsentRowsAtOnceAndVoidsTheirCodes(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        let id = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy)
        try store.release(claimed)
        let row = try #require(try store.messages().first)
        #expect(row.state == .queued)
        #expect(row.attempts == 0)
        #expect(row.leaseUntil == nil)
        let error = #expect(throws: HeraldError.self) {
            try store.consume(claimed[0].code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
        }
        #expect(error?.code == .expiredOOBCode)
        #expect(try store.claim(policy).map(\.message.id) == [id])
    }

    @Test(arguments: StoreKind.allCases)
    func releasedRetryGoesBackAsDeferredWithItsEarlierAttemptsKept(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        try store.record(try store.claim(policy, now: now)[0], Fixture.deferred(until: now, at: now), policy: policy)
        let retry = try store.claim(policy, now: now.addingTimeInterval(1))
        #expect(retry.first?.message.attempts == 2)
        try store.release(retry, now: now.addingTimeInterval(2))
        let row = try #require(try store.messages().first)
        #expect(row.state == .deferred)
        #expect(row.attempts == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func releaseAfterTheLeaseWasTakenLeavesTheNewOwnerAlone(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy { $0.worker.lease = 5 }
        try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain)
        let now = Date()
        let first = try store.claim(policy, now: now)
        let second = try store.claim(policy, now: now.addingTimeInterval(6))
        try store.release(first, now: now.addingTimeInterval(7))
        let row = try #require(try store.messages().first)
        #expect(row.state == .sending)
        #expect(row.leaseUntil?.milliseconds == second[0].message.leaseUntil?.milliseconds)
    }

    @Test(arguments: StoreKind.allCases)
    func queueStatusCountsPendingWorkAndWhenItIsDue(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let policy = Fixture.policy()
        #expect(try store.queueStatus() == QueueStatus(pending: 0, nextDue: nil))
        let now = Date()
        _ = try store.enqueue(Fixture.request(), messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        #expect(try store.queueStatus() == QueueStatus(pending: 1, nextDue: Date(milliseconds: now.milliseconds)))
        let claimed = try store.claim(policy, now: now)
        let leaseEnd = Date(milliseconds: now.milliseconds + 60_000)
        #expect(try store.queueStatus() == QueueStatus(pending: 1, sending: 1, nextDue: leaseEnd))
        try store.record(claimed[0], Fixture.sent(), policy: policy)
        #expect(try store.queueStatus().pending == 0)
    }
}

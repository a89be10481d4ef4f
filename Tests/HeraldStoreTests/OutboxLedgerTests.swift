import Foundation
import GRDB
import HeraldCore
import Testing

@testable import HeraldStore

/// The claim, record and release SQL on a real SQLite file in WAL mode.
@Suite struct OutboxLedgerTests {
    let path: String
    let store: HeraldStore
    var configuration = HeraldConfiguration()

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString).sqlite").path
        store = try HeraldStore(path: path)
        configuration.worker.lease = 60
        configuration.worker.maxAttempts = 3
    }

    var policy: ClaimPolicy { ClaimPolicy(configuration) }

    func policy(_ change: (inout HeraldConfiguration) -> Void) -> ClaimPolicy {
        var configuration = self.configuration
        change(&configuration)
        return ClaimPolicy(configuration)
    }

    func request(_ kind: ActionKind = .verifyEmail, _ email: String = "ada@example.com") throws -> ActionRequest {
        try ActionRequest(
            kind: kind, email: email,
            settings: kind == .signIn ? ActionCodeSettings(url: "https://localhost/finish", handleCodeInApp: true) : ActionCodeSettings(),
            links: configuration.links)
    }

    func sent(_ claimed: ClaimedMessage, at: Date = Date()) -> DeliveryRecord {
        DeliveryRecord(decision: .sent, replyCode: 250, replyText: "250 OK", startedAt: at, finishedAt: at)
    }

    @Test func enqueueIsDurableAndQueued() throws {
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let reopened = try HeraldStore(path: path)
        let rows = try reopened.messages()
        #expect(rows.map(\.id) == [id])
        #expect(rows[0].state == .queued)
        #expect(rows[0].messageID.hasSuffix("@herald.test>"))
        #expect(try reopened.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") } == "wal")
    }

    @Test func claimTakesDueRowsInOrderUpToTheLimit() throws {
        let policy = policy { $0.worker.batchSize = 2 }
        let ids = try (0..<3).map { try store.enqueue(request(.verifyEmail, "u\($0)@example.com"), messageDomain: "herald.test") }
        let first = try store.claim(policy)
        #expect(first.map(\.message.id) == Array(ids.prefix(2)))
        #expect(first.allSatisfy { $0.message.state == .sending && $0.message.attempts == 1 })
        let second = try store.claim(policy)
        #expect(second.map(\.message.id) == [ids[2]])
        #expect(try store.claim(policy).isEmpty)
    }

    @Test func claimSkipsRowsNotYetDue() throws {
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let claimed = try store.claim(policy)
        let retryAt = Date().addingTimeInterval(60)
        try store.record(
            claimed[0],
            DeliveryRecord(decision: .deferred(until: retryAt), replyCode: 451, replyText: "451 later", startedAt: Date(), finishedAt: Date()),
            policy: policy)
        #expect(try store.claim(policy).isEmpty)
        let later = try store.claim(policy, now: retryAt.addingTimeInterval(1))
        #expect(later.map(\.message.id) == [id])
        #expect(later[0].message.attempts == 2)
    }

    @Test func concurrentClaimsNeverShareARow() async throws {
        let policy = policy { $0.worker.batchSize = 7 }
        for n in 0..<300 { try store.enqueue(request(.verifyEmail, "u\(n)@example.com"), messageDomain: "herald.test") }
        let store = self.store
        let batches = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for _ in 0..<6 {
                group.addTask {
                    var ids: [Int64] = []
                    while case let batch = try store.claim(policy), !batch.isEmpty { ids += batch.map(\.message.id) }
                    return ids
                }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        #expect(batches.count == 300)
        #expect(Set(batches).count == 300)
    }

    @Test func expiredLeaseReturnsTheRowToTheQueue() throws {
        let policy = policy { $0.worker.lease = 5 }
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let now = Date()
        #expect(try store.claim(policy, now: now).count == 1)
        #expect(try store.claim(policy, now: now.addingTimeInterval(4)).isEmpty)
        let again = try store.claim(policy, now: now.addingTimeInterval(6))
        #expect(again.map(\.message.id) == [id])
        #expect(again[0].message.attempts == 2)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["interrupted"])
    }

    @Test func expiredLeaseWithNoAttemptsLeftIsDead() throws {
        let policy = policy {
            $0.worker.lease = 5
            $0.worker.maxAttempts = 1
        }
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let now = Date()
        #expect(try store.claim(policy, now: now).count == 1)
        #expect(try store.claim(policy, now: now.addingTimeInterval(6)).isEmpty)
        #expect(try store.messages().first { $0.id == id }?.state == .dead)
    }

    @Test func staleSignInAndResetExpireButVerificationWaits() throws {
        let policy = policy { $0.worker.maxQueueWait = [.signIn: 60, .resetPassword: 60] }
        let queuedAt = Date()
        let signIn = try store.enqueue(request(.signIn), messageDomain: "herald.test", now: queuedAt)
        let reset = try store.enqueue(request(.resetPassword), messageDomain: "herald.test", now: queuedAt)
        let verify = try store.enqueue(request(.verifyEmail), messageDomain: "herald.test", now: queuedAt)
        let claimed = try store.claim(policy, now: queuedAt.addingTimeInterval(61))
        #expect(claimed.map(\.message.id) == [verify])
        let states = Dictionary(uniqueKeysWithValues: try store.messages().map { ($0.id, $0.state) })
        #expect(states[signIn] == .expired)
        #expect(states[reset] == .expired)
    }

    @Test func sentCodeLivesFromSendTimeAndOnlyItsHashIsStored() throws {
        let policy = policy { $0.links.lifetime[.resetPassword] = 3600 }
        let id = try store.enqueue(request(.resetPassword), messageDomain: "herald.test")
        let claimedAt = Date()
        let claimed = try store.claim(policy, now: claimedAt)[0]
        let sentAt = claimedAt.addingTimeInterval(30)
        try store.record(claimed, sent(claimed, at: sentAt), policy: policy)
        let row = try store.read { db in
            try Row.fetchOne(db, sql: "SELECT code_hash, expires_at FROM action_codes WHERE outbox_id = ?", arguments: [id])!
        }
        #expect((row["code_hash"] as Data) == Data(claimed.code.hash))
        #expect((row["expires_at"] as Int64) == sentAt.milliseconds + 3_600_000)
        let message = try store.messages().first!
        #expect(message.state == .sent)
        #expect(message.lastReplyCode == 250)
        let files = [path, path + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }
        for data in files { #expect(data.range(of: Data(claimed.code.plaintext.utf8)) == nil) }
    }

    @Test func failedAndDeadRowsKeepTheirReplyAndVoidTheirCode() throws {
        let failedID = try store.enqueue(request(.verifyEmail, "a@example.com"), messageDomain: "herald.test")
        let deadID = try store.enqueue(request(.verifyEmail, "b@example.com"), messageDomain: "herald.test")
        let claimed = try store.claim(policy)
        try store.record(
            claimed[0], DeliveryRecord(decision: .failed, replyCode: 550, replyText: "550 5.1.1 No such user", startedAt: Date(), finishedAt: Date()),
            policy: policy)
        try store.record(
            claimed[1], DeliveryRecord(decision: .dead, replyCode: 451, replyText: "451 later", startedAt: Date(), finishedAt: Date()), policy: policy
        )
        let rows = Dictionary(uniqueKeysWithValues: try store.messages().map { ($0.id, $0) })
        #expect(rows[failedID]?.state == .failed)
        #expect(rows[failedID]?.lastReply == "550 5.1.1 No such user")
        #expect(rows[deadID]?.state == .dead)
        #expect(try store.attempts(outboxID: failedID).map(\.outcome) == ["failed"])
        let live = try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM action_codes WHERE expires_at > created_at")! }
        #expect(live == 0)
    }

    @Test func lateResultAfterTheLeaseWasTakenDoesNotOverwriteTheNewOwner() throws {
        let policy = policy { $0.worker.lease = 5 }
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let now = Date()
        let first = try store.claim(policy, now: now)[0]
        let second = try store.claim(policy, now: now.addingTimeInterval(6))[0]
        try store.record(second, sent(second, at: now.addingTimeInterval(7)), policy: policy)
        let late = DeliveryRecord(decision: .failed, replyCode: 550, replyText: "550 late", startedAt: now, finishedAt: now.addingTimeInterval(8))
        try store.record(first, late, policy: policy)
        let row = try store.messages().first { $0.id == id }!
        #expect(row.state == .sent)
        #expect(row.lastReplyCode == 250)
        #expect(try store.attempts(outboxID: id).map(\.outcome) == ["interrupted", "sent", "failed"])
    }

    @Test func unreadableRowIsFailedInsteadOfBlockingTheQueue() throws {
        let bad = try store.enqueue(request(.verifyEmail, "a@example.com"), messageDomain: "herald.test")
        let good = try store.enqueue(request(.verifyEmail, "b@example.com"), messageDomain: "herald.test")
        try store.pool.write { db in try db.execute(sql: "UPDATE outbox SET settings = 'not json' WHERE id = ?", arguments: [bad]) }
        #expect(try store.claim(policy).map(\.message.id) == [good])
        let row = try store.read { db in try Row.fetchOne(db, sql: "SELECT state, last_reply FROM outbox WHERE id = ?", arguments: [bad])! }
        #expect(row["state"] as String == "failed")
        #expect((row["last_reply"] as String).hasPrefix("unreadable row"))
    }

    @Test func releaseReturnsUnsentRowsImmediately() throws {
        let id = try store.enqueue(request(), messageDomain: "herald.test")
        let claimed = try store.claim(policy)
        try store.release(claimed)
        let row = try store.messages().first!
        #expect(row.state == .queued)
        #expect(row.attempts == 0)
        #expect(try store.claim(policy).map(\.message.id) == [id])
    }

    @Test func queueStatusCountsPendingWork() throws {
        #expect(try store.queueStatus().pending == 0)
        try store.enqueue(request(), messageDomain: "herald.test")
        #expect(try store.queueStatus().pending == 1)
        let claimed = try store.claim(policy)
        #expect(try store.queueStatus().pending == 1)
        try store.record(claimed[0], sent(claimed[0]), policy: policy)
        #expect(try store.queueStatus().pending == 0)
    }
}

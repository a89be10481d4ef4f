import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The suppression check of every send, asked outside GRDB's reader pool: the same answers as the pool's,
/// from many threads at once, and a ledger it cannot read is UNAVAILABLE, as for every other read.
@Suite struct QuickReadsTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test func theLookupSeesWhatWasCommittedLastAndNotWhatLapsed() throws {
        let store = try SQLiteStore(path: scratch.path("ledger.sqlite"))
        let quick = store.quick
        let lookup = SQLiteStore.lookupSuppression
        let at = now.milliseconds
        #expect(try quick.firstRow(lookup, text: "a@example.com", number: at) == nil)
        let hard = Suppression(email: "a@example.com", reason: .hardBounce, detail: "550 5.1.1 no such user", createdAt: now)
        try store.suppress([hard], now: now)
        let row = try #require(try quick.firstRow(lookup, text: "a@example.com", number: at), "a commit is seen by the next question")
        // Every column copied as it is stored: the entry reads as GRDB's pool reads it.
        let pooled = try store.read { db in try Row.fetchOne(db, sql: lookup, arguments: ["a@example.com", at]) }
        #expect(try Records.suppression(row) == Records.suppression(try #require(pooled)))
        #expect(try store.suppressions(emails: ["a@example.com"])["a@example.com"] == Records.suppression(row))
        #expect(try quick.firstRow(lookup, text: "b@example.com", number: at) == nil)
        // A soft bounce lapses: past its expiry the lookup, and so the check, finds nothing.
        let soft = Suppression(email: "soft@example.com", reason: .softBounce, createdAt: now, expiresAt: now.addingTimeInterval(60))
        try store.suppress([soft], now: now)
        #expect(try store.suppressions(emails: ["soft@example.com"])["soft@example.com"]?.expiresAt == soft.expiresAt)
        #expect(try quick.firstRow(lookup, text: "soft@example.com", number: at + 61_000) == nil)
        #expect(try store.unsuppress(email: "a@example.com"))
        #expect(try store.suppressions(emails: ["a@example.com"]).isEmpty)
    }

    @Test func manyThreadsAskingAtOnceEachGetTheirOwnAnswer() throws {
        let store = try SQLiteStore(path: scratch.path("ledger.sqlite"))
        let suppressed = (0..<20).map { "s\($0)@example.com" }
        try store.suppress(suppressed.map { Suppression(email: $0, reason: .complaint, createdAt: now) }, now: now)
        let wrong = Locked(0)
        let asked = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for n in 0..<200 {
                let email = n % 2 == 0 ? suppressed[(thread + n) % suppressed.count] : "free\(thread)-\(n)@example.com"
                // An error is a wrong answer too, not a "not suppressed".
                let found = try? store.suppressions(emails: [email])[email] != nil
                if found != (n % 2 == 0) { wrong.withLock { $0 += 1 } }
                asked.withLock { $0 += 1 }
            }
        }
        #expect(asked.withLock { $0 } == 16 * 200)
        #expect(wrong.withLock { $0 } == 0)
    }

    @Test func aLedgerThatIsGoneIsUnavailable() throws {
        // The file went away under a running server (a volume unmounted): a new connection cannot open it.
        let quick = QuickReads(path: scratch.path("gone/ledger.sqlite"), busyTimeout: 0.1)
        let error = #expect(throws: HeraldError.self) {
            try LedgerPool.translating { try quick.firstRow(SQLiteStore.lookupSuppression, text: "a@example.com", number: 0) }
        }
        #expect(error?.code == .unavailable)
    }
}

import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// The suppression check of every send, asked outside GRDB's reader pool: the same answers as the pool's,
/// from many threads at once, and a ledger it cannot read is UNAVAILABLE, as for every other read.
@Suite struct QuickReadsTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test func theProbeSeesWhatWasCommittedLastAndNotWhatLapsed() throws {
        let store = try SQLiteStore(path: scratch.path("ledger.sqlite"))
        let quick = store.quick
        let probe = SQLiteStore.probeSuppression
        let at = now.milliseconds
        #expect(try !quick.exists(probe, text: "a@example.com", number: at))
        try store.suppress([Suppression(email: "a@example.com", reason: .hardBounce, createdAt: now)], now: now)
        #expect(try quick.exists(probe, text: "a@example.com", number: at), "a commit is seen by the next question")
        #expect(try !quick.exists(probe, text: "b@example.com", number: at))
        #expect(try store.suppressions(emails: ["a@example.com"])["a@example.com"]?.reason == .hardBounce)
        // A soft bounce lapses: past its expiry the probe, and so the check, says no.
        try store.suppress(
            [Suppression(email: "soft@example.com", reason: .softBounce, createdAt: now, expiresAt: now.addingTimeInterval(60))], now: now)
        #expect(try quick.exists(probe, text: "soft@example.com", number: at))
        #expect(try !quick.exists(probe, text: "soft@example.com", number: at + 61_000))
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
            try LedgerPool.translating { try quick.exists(SQLiteStore.probeSuppression, text: "a@example.com", number: 0) }
        }
        #expect(error?.code == .unavailable)
    }
}

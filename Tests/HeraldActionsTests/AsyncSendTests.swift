import Foundation
import HeraldActions
import HeraldCore
import HeraldStore
import Testing

/// `accounts:sendOobCode`'s path, `SendingService.send(_:as:) async`, on both ledgers: SQLite's suspends on its group
/// commit; PostgreSQL's, whose durable writes block, runs the blocking send on one blocking thread.
@Suite struct AsyncSendTests {
    @Test(arguments: TestLedger.available)
    func anAppsSendsAreQueuedThrottledAndSilencedAsTheBlockingSendDoes(_ ledger: TestLedger) async throws {
        // A cooldown no run outlasts: the whole suite shares two cores, and a minute between two awaits is possible.
        let rulebook = try Rulebook(ledger: ledger) { $0.policy.cooldown = 3600 }
        #expect(rulebook.store.suspendsDurableWrites == ledger.suspends)
        _ = try rulebook.actions.accounts.createAccount(SignUpRequest(email: "ada@example.com", password: "secret-1"), as: .admin)
        let reset = SendRequest(kind: .resetPassword, email: "ada@example.com")

        let first = try await rulebook.actions.sending.send(reset, as: .app)
        guard case .queued(let id) = first.delivery else {
            Issue.record("expected a queued send, got \(first.delivery)")
            return
        }
        let queued = try rulebook.store.messages(state: .queued, email: nil, limit: nil)
        #expect(queued.map(\.id) == [id] && queued.first?.recipient.value == "ada@example.com")
        // The per-address cooldown is checked in the durable write, on either path.
        do {
            _ = try await rulebook.actions.sending.send(reset, as: .app)
            Issue.record("a second reset within the cooldown was queued")
        } catch let error as HeraldError {
            #expect(error.code == .tooManyAttempts)
        }
        // An unknown address is answered as sent and queues nothing.
        let nobody = try await rulebook.actions.sending.send(SendRequest(kind: .resetPassword, email: "nobody@example.org"), as: .app)
        #expect(nobody.delivery == .silent)
        #expect(try rulebook.store.stateCounts() == [.queued: 1])
    }
}

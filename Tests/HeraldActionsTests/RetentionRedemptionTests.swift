import Foundation
import HeraldActions
import HeraldCore
import HeraldStore
import Testing

/// A link whose message `ledger.messageRetention` pruned answers "expired", as Firebase answers an old link, not
/// "invalid"; a code that never existed still answers "invalid".
@Suite struct RetentionRedemptionTests {
    static let visitor = Visitor(ip: "198.51.100.9", userAgent: "mail client")

    @Test func aPrunedMessagesLinkAnswersExpiredAndAnUnknownCodeInvalid() throws {
        let rulebook = try Rulebook(owner: .app)
        let request = SendRequest(
            kind: .resetPassword, email: "old@example.org", settings: ActionCodeSettings(url: "https://app.example.com/done"))
        _ = try rulebook.actions.sending.send(request, as: .admin)
        var configuration = HeraldConfiguration()
        configuration.worker.batchSize = 10
        let policy = ClaimPolicy(configuration)
        let claimed = try rulebook.store.claim(policy, now: Date())
        let sent = try #require(claimed.first)
        let at = Date()
        try rulebook.store.record(
            sent, DeliveryRecord(decision: .sent, replyCode: 250, replyText: "250 ok", startedAt: at, finishedAt: at), policy: policy)
        let link = sent.code.plaintext
        let redemption = rulebook.actions.redemption
        #expect(try redemption.inspect(code: link, visitor: Self.visitor).email == "old@example.org")

        let pruned = try rulebook.store.pruneMessages(before: Date().addingTimeInterval(30 * 86_400), after: 0, limit: 100, now: Date())
        #expect(pruned.deleted == 1)
        #expect(code { _ = try redemption.inspect(code: link, visitor: Self.visitor) } == "EXPIRED_OOB_CODE")
        #expect(code { _ = try redemption.redeemForApp(code: link, visitor: Self.visitor) } == "EXPIRED_OOB_CODE")
        #expect(try redemption.click(code: link, kind: .resetPassword, visitor: Self.visitor) == .expired)

        // Codes the ledger never held: one made after the prune, and one without a key.
        for unknown in [ActionCode.generateForLedger().plaintext, ActionCode.generate().plaintext] {
            #expect(code { _ = try redemption.inspect(code: unknown, visitor: Self.visitor) } == "INVALID_OOB_CODE")
            #expect(code { _ = try redemption.redeemForApp(code: unknown, visitor: Self.visitor) } == "INVALID_OOB_CODE")
            #expect(try redemption.click(code: unknown, kind: .resetPassword, visitor: Self.visitor) == .invalid)
        }
    }

    @Test func aHeraldOwnedResetOfAPrunedLinkAnswersExpired() throws {
        let rulebook = try Rulebook()
        let created = Date(milliseconds: Date().milliseconds - 1000)
        try rulebook.store.createAccount(
            Account(
                uid: Account.newUID(), email: "kept@example.org", emailVerified: true, passwordHash: nil, disabled: false,
                validSince: created.milliseconds, createdAt: created))
        _ = try rulebook.actions.sending.send(SendRequest(kind: .resetPassword, email: "kept@example.org"), as: .admin)
        var configuration = HeraldConfiguration()
        configuration.worker.batchSize = 10
        let policy = ClaimPolicy(configuration)
        let sent = try #require(try rulebook.store.claim(policy, now: Date()).first { $0.message.kind == .resetPassword })
        let at = Date()
        try rulebook.store.record(
            sent, DeliveryRecord(decision: .sent, replyCode: 250, replyText: "250 ok", startedAt: at, finishedAt: at), policy: policy)
        #expect(try rulebook.store.pruneMessages(before: Date().addingTimeInterval(30 * 86_400), after: 0, limit: 100, now: Date()).deleted >= 1)
        let reset = {
            try rulebook.actions.redemption.resetPassword(code: sent.code.plaintext, newPassword: "another fine phrase", visitor: Self.visitor)
        }
        #expect(code { _ = try reset() } == "EXPIRED_OOB_CODE")
    }
}

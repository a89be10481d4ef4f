import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// Codes to type beside links, in the ledger: minted at claim for the mail that carries one, found by address and
/// action, counted when wrong, and redeemed through the same transaction as the link, which records the spelling.
@Suite struct TypedCodeStoreTests {
    let scratch = ScratchDirectory()
    let key = TypedCodeKey(key: SymmetricKey(size: .bits256))

    func policy(_ typedCodes: HeraldConfiguration.Policy.TypedCodes) -> ClaimPolicy {
        var policy = Fixture.policy { $0.policy.typedCodes = typedCodes }
        policy.typedCodes = TypedCodeMinting(key: key, policy: Fixture.configuration { $0.policy.typedCodes = typedCodes }.policy)
        return policy
    }

    func request(_ kind: ActionKind, _ email: String, asking wanted: Bool? = nil, session: String? = nil) throws -> ActionRequest {
        var request = try Fixture.request(kind, email)
        if let wanted { request.settings.typedCode = TypedCodeRequest(wanted: wanted, session: session) }
        return request
    }

    @Test(arguments: StoreKind.allCases)
    func theClaimMintsCodesForTheMailThatCarriesOneAndOnlyItsHashIsKept(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        _ = try store.enqueue(request(.signIn, "in@example.com"), messageDomain: Fixture.messageDomain)
        _ = try store.enqueue(request(.verifyEmail, "plain@example.com"), messageDomain: Fixture.messageDomain)
        _ = try store.enqueue(request(.verifyEmail, "asked@example.com", asking: true, session: "hash"), messageDomain: Fixture.messageDomain)
        _ = try store.enqueue(request(.signIn, "declined@example.com", asking: false), messageDomain: Fixture.messageDomain)
        let claimed = try store.claim(policy(.signIn))
        let typed = Dictionary(uniqueKeysWithValues: claimed.map { ($0.message.email.value, $0.typedCode) })
        #expect(typed["in@example.com"]??.value.count == 6)
        #expect(typed["asked@example.com"]??.value.count == 6)
        #expect(typed["plain@example.com"]! == nil)
        #expect(typed["declined@example.com"]! == nil)

        let target = try #require(try store.typedCodeTarget(email: "in@example.com", kinds: [.signIn]))
        let row = try #require(claimed.first { $0.message.email.value == "in@example.com" })
        #expect(target.codeID == row.codeID && target.tries == 0 && !target.spent && target.session == nil)
        #expect(key.matches(row.typedCode!.value, stored: target.typedHash, codeKey: target.codeKey))
        #expect(try store.typedCodeTarget(email: "asked@example.com", kinds: [.verifyEmail])?.session == "hash")
        #expect(try store.typedCodeTarget(email: "plain@example.com", kinds: [.verifyEmail]) == nil)
        #expect(try store.typedCodeTarget(email: "in@example.com", kinds: [.verifyEmail]) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func offMintsNothingWhateverTheRequestSaid(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        _ = try store.enqueue(request(.signIn, "in@example.com", asking: true), messageDomain: Fixture.messageDomain)
        #expect(try store.claim(policy(.off)).map(\.typedCode) == [nil])
        #expect(try store.typedCodeTarget(email: "in@example.com", kinds: [.signIn]) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func wrongTriesAreCountedAndTheTypedRedemptionRecordsItsSpelling(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        _ = try store.enqueue(request(.resetPassword, "ada@example.com"), messageDomain: Fixture.messageDomain)
        try store.createAccount(Fixture.account("ada@example.com"))
        _ = try store.claim(policy(.all))
        let target = try #require(try store.typedCodeTarget(email: "ada@example.com", kinds: [.resetPassword]))
        #expect(try store.recordWrongTypedCode(target, visitor: Fixture.visitor, now: Date()) == 1)
        #expect(try store.recordWrongTypedCode(target, visitor: Fixture.visitor, now: Date()) == 2)
        let counted = try #require(try store.typedCodeTarget(email: "ada@example.com", kinds: [.resetPassword]))
        #expect(counted.tries == 2)

        _ = try store.redeemPasswordReset(.typed(counted), passwordHash: "pbkdf2-sha256$x", visitor: Fixture.visitor, now: Date())
        let spent = try #require(try store.typedCodeTarget(email: "ada@example.com", kinds: [.resetPassword]))
        #expect(spent.spent)
        let rows = try kind.rows(in: scratch, "SELECT redeemed_with FROM action_codes")
        #expect(rows.map { $0["redeemed_with"] ?? nil } == ["typed"])
        let again = #expect(throws: HeraldError.self) {
            try store.redeemPasswordReset(.typed(counted), passwordHash: "pbkdf2-sha256$x", visitor: Fixture.visitor, now: Date())
        }
        #expect(again?.code == .invalidOOBCode)
    }
}

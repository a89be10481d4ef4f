import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// Codes: minting, single use, supersede, expired versus invalid, and `consume` for app-owned accounts.
@Suite struct CodeStoreTests {
    let scratch = ScratchDirectory()

    @Test(arguments: StoreKind.allCases)
    func mintedCodeIsFoundByItsPlaintext(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let code = try store.mintCode(
            .verifyAndChangeEmail, email: "ada@example.com", newEmail: "ada@new.example", continueURL: "https://localhost/done", lifetime: 600,
            now: now)
        let record = try #require(try store.code(code.plaintext))
        #expect(record.kind == .verifyAndChangeEmail)
        #expect(record.email == "ada@example.com")
        #expect(record.newEmail == "ada@new.example")
        #expect(record.continueURL == "https://localhost/done")
        #expect(record.outboxID == nil)
        #expect(record.campaignID == nil)
        #expect(record.createdAt.milliseconds == now.milliseconds)
        #expect(record.expiresAt.milliseconds == now.milliseconds + 600_000)
        #expect(record.redeemedAt == nil)
        #expect(try store.code(ActionCode.generate().plaintext) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func aCodeStoredBeforeKeysByItsSHA256AloneIsStillFoundAndRedeemedOnce(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let legacy = ActionCode.generate().plaintext  // 43 characters, as every code was before keyed codes
        let at = Date().milliseconds
        let arguments = (Data(ActionCode.hash(legacy)), ActionKind.resetPassword.rawValue, "ada@example.com", at, at + 600_000)
        let insert = "INSERT INTO action_codes (code_hash, action, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)"
        switch store {
        case let sqlite as SQLiteStore:
            try sqlite.pool.write { db in
                try db.execute(
                    sql: insert, arguments: [arguments.0, arguments.1, arguments.2, arguments.3, arguments.4])
            }
        case let postgres as PostgresStore:
            try postgres.pool.write { db in
                _ = try db.execute(insert, [arguments.0, arguments.1, arguments.2, arguments.3, arguments.4])
            }
        default:
            Issue.record("a store kind this test does not know")
        }
        let newer = try Fixture.mint(.resetPassword, "bob@example.com", in: store)
        #expect(newer.count == 54 && legacy.count == 43)
        #expect(try store.code(legacy)?.email == "ada@example.com")
        _ = try store.consume(legacy, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        #expect(try store.code(legacy)?.redeemedAt != nil)
        let again = #expect(throws: HeraldError.self) {
            try store.consume(legacy, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        }
        #expect(again?.code == .invalidOOBCode)
        #expect(try store.code(newer)?.email == "bob@example.com")
    }

    @Test(arguments: StoreKind.allCases)
    func aRedemptionSupersedesItsFamilyWhetherMailedByOneSendACampaignOrMintedAndNoOtherCode(_ kind: StoreKind) throws {
        // Mailed codes are found through their outbox rows, minted ones through their own index: every branch of
        // that lookup is here, with its neighbours that must stay live.
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let policy = Fixture.policy()
        for (action, email) in [
            (ActionKind.resetPassword, "ada@example.com"), (.resetPassword, "ada@example.com"), (.resetPassword, "bob@example.com"),
            (.verifyEmail, "ada@example.com"), (.verifyEmail, "new-ada@example.com"),
            (.verifyAndChangeEmail, "ada@example.com"), (.verifyAndChangeEmail, "ada@example.com"),
        ] {
            _ = try store.enqueue(Fixture.request(action, email), messageDomain: Fixture.messageDomain, throttle: nil, now: now)
        }
        let campaign = try Fixture.campaign("welcome", .verifyEmail, now: now, in: store)
        try Fixture.add(["ada@example.com"], to: campaign, now: now, in: store)
        let claimed = try store.claim(policy, now: now)
        #expect(claimed.count == 8)
        for message in claimed { try store.record(message, Fixture.sent(at: now), policy: policy) }
        func codes(_ action: ActionKind, _ email: String, campaign: Bool = false) -> [String] {
            claimed.filter { $0.message.kind == action && $0.message.email.value == email && ($0.message.campaignID != nil) == campaign }
                .map(\.code.plaintext)
        }
        func isLive(_ code: String) throws -> Bool { try #require(try store.code(code)).supersededAt == nil }
        let minted = try Fixture.mint(.resetPassword, "ada@example.com", in: store)
        let adaResets = codes(.resetPassword, "ada@example.com")
        let changes = codes(.verifyAndChangeEmail, "ada@example.com")
        #expect(adaResets.count == 2 && changes.count == 2)
        #expect(claimed.filter { $0.message.kind == .verifyAndChangeEmail }.allSatisfy { $0.message.recipient.value == "new-ada@example.com" })

        _ = try store.consume(adaResets[1], expecting: [.resetPassword], visitor: Fixture.visitor, now: now)
        #expect(try !isLive(adaResets[0]) && !isLive(minted), "a mailed and a minted code of the family")
        let others = codes(.resetPassword, "bob@example.com") + codes(.verifyEmail, "ada@example.com") + changes
        #expect(try others.allSatisfy(isLive), "another address's or another action's code")

        _ = try store.consume(
            codes(.verifyEmail, "ada@example.com", campaign: true)[0], expecting: [.verifyEmail], visitor: Fixture.visitor, now: now)
        #expect(try !isLive(codes(.verifyEmail, "ada@example.com")[0]), "a single send's code, by a campaign's")
        #expect(try isLive(codes(.verifyEmail, "new-ada@example.com")[0]))

        _ = try store.consume(changes[0], expecting: [.verifyAndChangeEmail], visitor: Fixture.visitor, now: now)
        #expect(try !isLive(changes[1]), "a change's family is its old address, though it was mailed to the new one")
        #expect(try isLive(codes(.verifyEmail, "new-ada@example.com")[0]), "the new address's own verification")
        #expect(try isLive(codes(.resetPassword, "bob@example.com")[0]))

        // The minted side alone: a minted code's redemption supersedes the family's mailed codes too.
        let mintedVerify = try Fixture.mint(.verifyEmail, "new-ada@example.com", in: store)
        _ = try store.consume(mintedVerify, expecting: [.verifyEmail], visitor: Fixture.visitor, now: now)
        #expect(try !isLive(codes(.verifyEmail, "new-ada@example.com")[0]))
        #expect(try isLive(codes(.resetPassword, "bob@example.com")[0]))
    }

    @Test(arguments: StoreKind.allCases)
    func fiftyConcurrentRedemptionsHaveOneWinner(_ kind: StoreKind) async throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.resetPassword, in: store)
        let wins = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    (try? store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())) != nil
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1)
        #expect(try store.code(code)?.redeemedAt != nil)
    }

    @Test(arguments: StoreKind.allCases)
    func redeemingSupersedesTheOtherLiveCodesOfTheSameEmailAndAction(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let older = try Fixture.mint(.resetPassword, in: store)
        let newer = try Fixture.mint(.resetPassword, in: store)
        let otherAction = try Fixture.mint(.verifyEmail, in: store)
        let otherEmail = try Fixture.mint(.resetPassword, "bob@example.com", in: store)
        _ = try store.consume(newer, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        #expect(try store.code(older)?.supersededAt != nil)
        let error = #expect(throws: HeraldError.self) {
            try store.consume(older, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        }
        #expect(error?.code == .invalidOOBCode)
        _ = try store.consume(otherAction, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
        _ = try store.consume(otherEmail, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
    }

    @Test(arguments: StoreKind.allCases)
    func usedCodeIsInvalidTheSecondTime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.verifyEmail, in: store)
        _ = try store.consume(code, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
        let error = #expect(throws: HeraldError.self) {
            try store.consume(code, expecting: [.verifyEmail], visitor: Fixture.visitor, now: Date())
        }
        #expect(error?.code == .invalidOOBCode)
    }

    @Test(arguments: StoreKind.allCases)
    func expiredCodeIsRejectedWithExpiredOobCodeAndUnknownOneWithInvalid(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        // Between two milliseconds: the ledger keeps milliseconds, and a code is expired from its expiry's millisecond on.
        let now = Date(milliseconds: Date().milliseconds).addingTimeInterval(0.0006)
        let code = try Fixture.mint(.resetPassword, lifetime: 60, now: now, in: store)
        let expired = #expect(throws: HeraldError.self) {
            try store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: now.addingTimeInterval(60))
        }
        #expect(expired?.code == .expiredOOBCode)
        let unknown = #expect(throws: HeraldError.self) {
            try store.consume("no-such-code", expecting: [.resetPassword], visitor: Fixture.visitor, now: now)
        }
        #expect(unknown?.code == .invalidOOBCode)
        _ = try store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: now.addingTimeInterval(59))
    }

    @Test(arguments: StoreKind.allCases)
    func codeOfAnotherActionIsInvalidAndStaysUsable(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.signIn, in: store)
        let error = #expect(throws: HeraldError.self) {
            try store.consume(code, expecting: [.resetPassword], visitor: Fixture.visitor, now: Date())
        }
        #expect(error?.code == .invalidOOBCode)
        #expect(try store.code(code)?.redeemedAt == nil)
        _ = try store.consume(code, expecting: [.signIn], visitor: Fixture.visitor, now: Date())
    }

    @Test(arguments: StoreKind.allCases)
    func consumeTouchesNoAccountAndReturnsTheCampaignAndContinueURL(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let now = Date()
        let account = Fixture.account(passwordHash: "pbkdf2-sha256$1$salt$hash", now: now)
        try store.createAccount(account)
        let campaign = try Fixture.campaign("welcome", settings: ActionCodeSettings(url: "https://localhost/welcome"), now: now, in: store)
        try Fixture.add(["ada@example.com"], to: campaign, now: now, in: store)
        let policy = Fixture.policy()
        let claimed = try #require(try store.claim(policy, now: now).first)
        try store.record(claimed, Fixture.sent(at: now), policy: policy)
        let redeemedAt = now.addingTimeInterval(90)

        let record = try store.consume(claimed.code.plaintext, expecting: [.verifyEmail], visitor: Fixture.visitor, now: redeemedAt)

        #expect(record.campaignID == campaign.id)
        #expect(record.continueURL == "https://localhost/welcome")
        #expect(record.outboxID == claimed.message.id)
        #expect(try store.account(uid: account.uid) == account)
        #expect(try store.accounts().count == 1)
        var filter = AuditFilter()
        filter.campaign = campaign.id
        var rows: [AuditRow] = []
        try store.audit(filter, now: redeemedAt) { rows.append($0) }
        #expect(rows.map(\.id) == [claimed.message.id])
        #expect(rows.first?.redeemedAt?.milliseconds == redeemedAt.milliseconds)
        #expect(rows.first?.redeemedIP == Fixture.visitor.ip)
        #expect(rows.first?.redeemedUserAgent == Fixture.visitor.userAgent)
    }
}

import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// An import's accounts, pages of accounts by uid, batch deletes and the first sign-in's hash swap, on both engines.
@Suite struct AccountImportStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func importWritesTheFreeAccountsAndNamesTheTakenOnes(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account("taken@example.com", uid: "existing", now: now))
        _ = try store.signIn(
            with: FederatedIdentity(providerId: "google.com", rawId: "g-1"), linking: nil, trusted: false, visitor: Visitor(ip: nil, userAgent: nil),
            now: now)
        var claims = Fixture.account("claims@example.com", uid: "claims", now: now)
        claims.customAttributes = #"{"role":"admin"}"#
        claims.phoneNumber = "+15555550100"
        let batch = [
            ImportedAccount(account: claims, identities: [FederatedIdentity(providerId: "github.com", rawId: "gh-1", email: "c@x.test")]),
            ImportedAccount(account: Fixture.account("new@example.com", uid: "existing", now: now)),
            ImportedAccount(account: Fixture.account("TAKEN@example.com", uid: "other", now: now)),
            ImportedAccount(
                account: Fixture.account(nil, uid: "idp", now: now), identities: [FederatedIdentity(providerId: "google.com", rawId: "g-1")]),
            ImportedAccount(account: Fixture.account("free@example.com", uid: "free", now: now)),
        ]
        let conflicts = try store.importAccounts(batch, overwrite: false, now: now)
        #expect(conflicts == [1: .uidExists, 2: .emailExists, 3: .identityExists])
        #expect(try store.account(uid: "claims") == claims)
        #expect(try store.identities(uid: "claims").map(\.rawId) == ["gh-1"])
        #expect(try store.account(uid: "free")?.email == "free@example.com")
        #expect(try store.account(uid: "existing")?.email == "taken@example.com")
        #expect(try store.account(uid: "other") == nil && store.account(uid: "idp") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func overwriteReplacesTheAccountAndItsIdentities(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let first = ImportedAccount(
            account: Fixture.account("old@example.com", uid: "u1", now: now), identities: [FederatedIdentity(providerId: "google.com", rawId: "g-9")])
        #expect(try store.importAccounts([first], overwrite: false, now: now).isEmpty)
        var replacement = Fixture.account("new@example.com", uid: "u1", now: now)
        replacement.displayName = "New"
        #expect(try store.importAccounts([ImportedAccount(account: replacement)], overwrite: false, now: now) == [0: .uidExists])
        #expect(try store.importAccounts([ImportedAccount(account: replacement)], overwrite: true, now: now).isEmpty)
        #expect(try store.account(uid: "u1")?.displayName == "New")
        #expect(try store.account(email: "old@example.com") == nil)
        #expect(try store.identities(uid: "u1").isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func anOverwriteFreesTheReplacedAccountsKeysForTheRestOfTheBatch(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var old = Fixture.account("old@example.com", uid: "u1", now: now)
        old.phoneNumber = "+15555550101"
        let first = ImportedAccount(account: old, identities: [FederatedIdentity(providerId: "google.com", rawId: "g-1")])
        #expect(try store.importAccounts([first], overwrite: false, now: now).isEmpty)
        var taker = Fixture.account("old@example.com", uid: "u2", now: now)
        taker.phoneNumber = "+15555550101"
        let batch = [
            ImportedAccount(account: Fixture.account("new@example.com", uid: "u1", now: now)),
            ImportedAccount(account: taker, identities: [FederatedIdentity(providerId: "google.com", rawId: "g-1")]),
        ]
        #expect(try store.importAccounts(batch, overwrite: true, now: now).isEmpty)
        #expect(try store.account(email: "old@example.com")?.uid == "u2")
        #expect(try store.account(phoneNumber: "+15555550101")?.uid == "u2")
        #expect(try store.identities(uid: "u2").map(\.rawId) == ["g-1"])
    }

    @Test(arguments: StoreKind.allCases)
    func accountsPageInBytewiseUIDOrderAndCount(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let uids = ["b", "a", "C", "a1", "Z", "_"]
        for uid in uids { try store.createAccount(Fixture.account("\(uid)@example.com", uid: uid, now: now)) }
        let sorted = uids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var seen: [String] = []
        var after: String?
        while true {
            let page = try store.accounts(after: after, limit: 4)
            seen += page.map(\.uid)
            guard page.count == 4 else { break }
            after = page.last?.uid
        }
        #expect(seen == sorted)
        #expect(try store.accountCount() == uids.count)
        #expect(try store.accounts(after: nil, offset: 2, limit: 3).map(\.uid) == Array(sorted[2..<5]))
        #expect(try store.accounts(after: nil, offset: Int(Int32.max), limit: 3).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func batchDeleteDeletesWhatTheRuleAdmitsAndRevokesTokens(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account("on@example.com", uid: "on", now: now))
        try store.createAccount(Fixture.account("off@example.com", uid: "off", disabled: true, now: now))
        try store.createRefreshToken(RefreshTokenRecord(hash: [1, 2, 3], uid: "off", provider: "password", issuedAt: now))
        let refused = try store.deleteAccounts(uids: ["on", "nobody", "off"]) { $0.disabled }
        #expect(refused == ["on"])
        #expect(try store.account(uid: "on") != nil && store.account(uid: "off") == nil)
        #expect(try store.refreshToken(hash: [1, 2, 3])?.revoked == .userNotFound)
    }

    @Test(arguments: StoreKind.allCases)
    func passwordHashIsReplacedOnlyWhileItIsTheOneVerified(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account(uid: "u", passwordHash: "firebase-md5$0$SALT_AND_PASSWORD$$AAAA", now: now))
        #expect(try !store.replacePasswordHash(uid: "u", current: "something else", with: "pbkdf2-sha256$x", loginAt: now))
        #expect(try store.replacePasswordHash(uid: "u", current: "firebase-md5$0$SALT_AND_PASSWORD$$AAAA", with: "pbkdf2-sha256$x", loginAt: now))
        let account = try store.account(uid: "u")
        #expect(account?.passwordHash == "pbkdf2-sha256$x")
        #expect(account?.lastLoginAt == now)
    }
}

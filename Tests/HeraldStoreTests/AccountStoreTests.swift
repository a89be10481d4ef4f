import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// Accounts when Herald owns them: unique addresses, atomic changes, standings for the sending rules.
@Suite struct AccountStoreTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)

    @Test(arguments: StoreKind.allCases)
    func createdAccountIsFoundByUIDAndByAddressInAnyCase(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var account = Fixture.account(verified: true, passwordHash: "pbkdf2-sha256$1$s$h", now: now)
        account.displayName = "Ada Lovelace"
        account.lastLoginAt = now
        account.providers = ["password"]
        try store.createAccount(account)
        #expect(try store.account(uid: account.uid) == account)
        #expect(try store.account(email: "ADA@example.COM") == account)
        #expect(try store.account(uid: "nobody") == nil)
        #expect(try store.account(email: "nobody@example.com") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func secondAccountForAnAddressOrUIDIsRefused(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account(uid: "uid-ada", now: now))
        let sameAddress = #expect(throws: HeraldError.self) { try store.createAccount(Fixture.account("Ada@Example.com", now: now)) }
        #expect(sameAddress?.code == .emailExists)
        let sameUID = #expect(throws: HeraldError.self) { try store.createAccount(Fixture.account("bob@example.com", uid: "uid-ada", now: now)) }
        #expect(sameUID?.code == .duplicateLocalID)
        #expect(try store.accounts().count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentUpdatesNeverLoseAChange(_ kind: StoreKind) async throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask { _ = try store.updateAccount(uid: account.uid) { $0.validSince += 1 } }
            }
            try await group.waitForAll()
        }
        #expect(try store.account(uid: account.uid)?.validSince == account.validSince + 40)
    }

    @Test(arguments: StoreKind.allCases)
    func updateReturnsAndStoresTheChangedAccount(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        let updated = try store.updateAccount(uid: account.uid) {
            $0.email = "lovelace@example.com"
            $0.displayName = "Ada"
            $0.addProvider("password")
        }
        #expect(updated.email == "lovelace@example.com")
        #expect(try store.account(uid: account.uid) == updated)
        #expect(try store.account(email: "ada@example.com") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func refusedUpdateChangesNothing(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let ada = Fixture.account(now: now)
        try store.createAccount(ada)
        try store.createAccount(Fixture.account("bob@example.com", now: now))
        let taken = #expect(throws: HeraldError.self) { try store.updateAccount(uid: ada.uid) { $0.email = "BOB@example.com" } }
        #expect(taken?.code == .emailExists)
        let refused = #expect(throws: HeraldError.self) {
            try store.updateAccount(uid: ada.uid) {
                $0.disabled = true
                throw HeraldError(.weakPassword, "")
            }
        }
        #expect(refused?.code == .weakPassword)
        #expect(try store.account(uid: ada.uid) == ada)
        let missing = #expect(throws: HeraldError.self) { try store.updateAccount(uid: "nobody") { $0.disabled = true } }
        #expect(missing?.code == .userNotFound)
    }

    @Test(arguments: StoreKind.allCases)
    func recordingALoginKeepsAConcurrentPasswordChange(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        let changed = try store.updateAccount(uid: account.uid) { $0.passwordHash = "pbkdf2-sha256$1$new$new" }
        let login = Date(milliseconds: now.milliseconds + 1000)
        try store.recordLogin(uid: account.uid, at: login)
        let stored = try #require(try store.account(uid: account.uid))
        #expect(stored.passwordHash == changed.passwordHash)
        #expect(stored.lastLoginAt == login)
    }

    @Test(arguments: StoreKind.allCases)
    func deletingAnAccountReportsWhetherThereWasOne(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        #expect(try store.deleteAccount(uid: account.uid))
        #expect(try !store.deleteAccount(uid: account.uid))
        #expect(try store.account(uid: account.uid) == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func accountsAreListedOldestFirst(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        for (offset, email) in ["c@example.com", "a@example.com", "b@example.com"].enumerated() {
            try store.createAccount(Fixture.account(email, now: Date(milliseconds: now.milliseconds + Int64(offset) * 1000)))
        }
        #expect(try store.accounts().map(\.email) == ["c@example.com", "a@example.com", "b@example.com"])
        #expect(try store.accounts(limit: 2).map(\.email) == ["c@example.com", "a@example.com"])
    }

    @Test(arguments: StoreKind.allCases)
    func standingsAreKeyedByLowerCasedAddressForKnownAccountsOnly(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        var ada = Fixture.account(verified: true, now: now)
        ada.displayName = "Ada"
        try store.createAccount(ada)
        try store.createAccount(Fixture.account("bob@example.com", disabled: true, now: now))
        let standings = try store.standings(emails: ["ADA@example.com", "bob@example.com", "nobody@example.com"])
        #expect(
            standings == [
                "ada@example.com": AccountStanding(disabled: false, emailVerified: true, displayName: "Ada"),
                "bob@example.com": AccountStanding(disabled: true, emailVerified: false, displayName: nil),
            ])
        #expect(try store.standings(emails: []).isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func anAccountIsFoundByTheEmailOfAProviderLinkedToIt(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let visitor = Visitor(ip: nil, userAgent: nil)
        let google = FederatedIdentity(providerId: "google.com", rawId: "g-1", email: "ada@gmail.com", emailVerified: true)
        let created = try store.signIn(with: google, linking: nil, trusted: true, visitor: visitor, now: now).account
        // A new email at the provider moves the identity, not the account's own address.
        var moved = google
        moved.email = "ada.lovelace@gmail.com"
        _ = try store.signIn(with: moved, linking: nil, trusted: true, visitor: visitor, now: now)
        #expect(try store.account(providerEmail: "ADA.Lovelace@gmail.com")?.uid == created.uid)
        #expect(try store.account(providerEmail: "ada@gmail.com") == nil)
        #expect(try store.account(email: "ada@gmail.com")?.uid == created.uid)
    }
}

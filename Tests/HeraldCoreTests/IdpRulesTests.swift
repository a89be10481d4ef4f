import Foundation
import HeraldCore
import Testing

@Suite struct IdpRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let google = FederatedIdentity(providerId: "google.com", rawId: "g-1", email: "ada@example.com", emailVerified: true)

    func account(_ uid: String, email: String?, verified: Bool = false, providers: [String] = ["password"]) -> Account {
        Account(
            uid: uid, email: email, emailVerified: verified, passwordHash: "hash", validSince: 0, createdAt: now,
            providers: providers)
    }

    @Test func aLinkedIdentitySignsItsAccountIn() throws {
        let holder = account("u1", email: "ada@example.com", providers: ["google.com"])
        #expect(try IdpDecision.decide(google, holder: holder, linking: nil, byEmail: holder, trusted: true) == .signIn(uid: "u1"))
    }

    @Test func aNewEmailMakesANewAccount() throws {
        #expect(try IdpDecision.decide(google, holder: nil, linking: nil, byEmail: nil, trusted: true) == .create)
        let created = Account.created(from: google, uid: "new", now: now)
        #expect(created.email == "ada@example.com" && created.emailVerified && created.providers == ["google.com"])
    }

    @Test func anUntrustedOrUnverifiedEmailOfAnotherAccountNeedsConfirmation() throws {
        let existing = account("u1", email: "ada@example.com", verified: true)
        #expect(try IdpDecision.decide(google, holder: nil, linking: nil, byEmail: existing, trusted: false) == .needConfirmation(uid: "u1"))
        var unverified = google
        unverified.emailVerified = false
        #expect(
            try IdpDecision.decide(unverified, holder: nil, linking: nil, byEmail: existing, trusted: true) == .needConfirmation(uid: "u1"))
    }

    @Test func aTrustedVerifiedEmailLinksOrTakesOver() throws {
        let verified = account("u1", email: "ada@example.com", verified: true)
        #expect(try IdpDecision.decide(google, holder: nil, linking: nil, byEmail: verified, trusted: true) == .adopt(uid: "u1"))
        var unverified = account("u2", email: "ada@example.com", verified: false)
        #expect(try IdpDecision.decide(google, holder: nil, linking: nil, byEmail: unverified, trusted: true) == .takeOver(uid: "u2"))
        unverified.takeOver(by: google, now: now)
        #expect(unverified.passwordHash == nil && unverified.emailVerified && unverified.providers == ["google.com"])
        #expect(unverified.validSince == now.milliseconds)
    }

    @Test func aProviderThatVouchesForTheAddressBringsItsProfile() {
        var named = account("u1", email: "ada@example.com", verified: true)
        named.displayName = "Ada"
        named.photoURL = "https://example.com/old.png"
        var photographed = google
        photographed.photoURL = "https://example.com/new.png"
        named.adopt(photographed, now: now)
        #expect(named.displayName == nil && named.photoURL == "https://example.com/new.png")
        #expect(named.passwordHash == "hash" && named.providers == ["password", "google.com"] && named.emailVerified)
    }

    @Test func linkingRefusesTakenIdentitiesAndProviders() throws {
        let me = account("me", email: "me@example.com")
        let other = account("other", email: "x@example.com", providers: ["google.com"])
        #expect(throws: HeraldError.self) { try IdpDecision.decide(google, holder: other, linking: me, byEmail: nil, trusted: true) }
        let alreadyGoogle = account("me", email: "me@example.com", providers: ["password", "google.com"])
        #expect(throws: HeraldError.self) {
            try IdpDecision.decide(google, holder: nil, linking: alreadyGoogle, byEmail: nil, trusted: true)
        }
        #expect(try IdpDecision.decide(google, holder: nil, linking: me, byEmail: nil, trusted: true) == .link(uid: "me"))
        // An account without an email would take the identity's, which another account holds.
        let anonymous = account("anon", email: nil, providers: [])
        let ada = account("ada", email: "ada@example.com")
        #expect(throws: HeraldError(.emailExists, "")) {
            try IdpDecision.decide(google, holder: nil, linking: anonymous, byEmail: ada, trusted: true)
        }
        // So would an account with an address of its own: the provider's email is another account's.
        #expect(throws: HeraldError(.emailExists, "")) { try IdpDecision.decide(google, holder: nil, linking: me, byEmail: ada, trusted: true) }
        // An identity already on the linking account is refused too, as Firebase refuses it.
        let linked = account("me", email: "me@example.com", providers: ["password", "google.com"])
        #expect(throws: HeraldError(.federatedUserIDAlreadyLinked, "")) {
            try IdpDecision.decide(google, holder: linked, linking: linked, byEmail: nil, trusted: true)
        }
    }

    @Test func disabledAccountsAreRefused() throws {
        var holder = account("u1", email: "ada@example.com", providers: ["google.com"])
        holder.disabled = true
        #expect(throws: HeraldError.self) { try IdpDecision.decide(google, holder: holder, linking: nil, byEmail: holder, trusted: true) }
    }
}

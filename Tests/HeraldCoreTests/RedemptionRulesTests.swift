import Foundation
import HeraldCore
import Testing

@Suite struct RedemptionRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func code(_ kind: ActionKind, email: String = "ada@example.com", newEmail: String? = nil, minted: Date? = nil) -> CodeRecord {
        CodeRecord(
            id: 1, kind: kind, email: email, newEmail: newEmail, outboxID: nil, continueURL: nil, campaignID: nil,
            createdAt: minted ?? now, expiresAt: now.addingTimeInterval(3600), redeemedAt: nil, supersededAt: nil)
    }

    func account(_ uid: String, _ email: String, created: Date? = nil, initialEmail: String? = nil, disabled: Bool = false) -> Account {
        Account(
            uid: uid, email: email, passwordHash: "hash", disabled: disabled, validSince: 0, createdAt: created ?? now.addingTimeInterval(-60),
            initialEmail: initialEmail)
    }

    func refusal(_ body: () throws -> Any) -> HeraldError.Code? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? HeraldError)?.code
        }
    }

    @Test func aRecoveryCodeSpeaksForTheAccountTheChangeMovedAndOnlyIt() throws {
        let recovery = code(.recoverEmail, email: "old@example.com", newEmail: "new@example.com")
        #expect(RedemptionRules.address(of: recovery) == "new@example.com")
        #expect(RedemptionRules.address(of: code(.verifyEmail)) == "ada@example.com")
        let moved = account("u1", "new@example.com", initialEmail: "old@example.com")
        let recovered = try RedemptionRules.verify(recovery, holder: moved, now: now)
        #expect(recovered.email == "old@example.com" && recovered.emailVerified && recovered.validSince == now.milliseconds)
        let stranger = account("u2", "new@example.com", initialEmail: "other@example.com")
        #expect(refusal { try RedemptionRules.verify(recovery, holder: stranger, now: self.now) } == .invalidOOBCode)
        #expect(refusal { try RedemptionRules.verify(recovery, holder: nil, now: self.now) } == .invalidOOBCode)
    }

    @Test func aCodeSpeaksOnlyForAnAccountThatExistedWhenItWasMinted() {
        let verify = code(.verifyEmail, minted: now)
        let newer = account("u1", "ada@example.com", created: now.addingTimeInterval(1))
        #expect(refusal { try RedemptionRules.verify(verify, holder: newer, now: self.now) } == .invalidOOBCode)
        #expect(refusal { try RedemptionRules.verify(verify, holder: nil, now: self.now) } == .emailNotFound)
        let reset = code(.resetPassword, minted: now)
        #expect(refusal { try RedemptionRules.resetPassword(reset, holder: newer, passwordHash: "h", now: self.now) } == .invalidOOBCode)
        #expect(refusal { try RedemptionRules.resetPassword(reset, holder: nil, passwordHash: "h", now: self.now) } == .emailNotFound)
    }

    @Test func aResetSetsThePasswordAndProvesTheAddress() throws {
        let reset = try RedemptionRules.resetPassword(code(.resetPassword), holder: account("u1", "ada@example.com"), passwordHash: "new", now: now)
        #expect(reset.passwordHash == "new" && reset.emailVerified && reset.providers.contains("password"))
        let disabled = account("u1", "ada@example.com", disabled: true)
        #expect(
            refusal { try RedemptionRules.resetPassword(self.code(.resetPassword), holder: disabled, passwordHash: "h", now: self.now) }
                == .userDisabled)
    }

    @Test func emailLinkSignInLinksSignsInOrCreatesAndNeverFallsBack() throws {
        let signIn = code(.signIn)
        #expect(
            refusal {
                try RedemptionRules.emailLinkSignIn(
                    signIn, email: "bob@example.com", owner: nil, linking: nil, linkingGone: false, newUID: "n", now: self.now)
            } == .invalidEmail)
        #expect(
            refusal {
                try RedemptionRules.emailLinkSignIn(
                    signIn, email: "ada@example.com", owner: self.account("u1", "ada@example.com"), linking: nil, linkingGone: true,
                    newUID: "n", now: self.now)
            } == .userNotFound)
        let owner = account("u1", "ada@example.com")
        let other = account("u2", "anon@example.com")
        #expect(
            refusal {
                try RedemptionRules.emailLinkSignIn(
                    signIn, email: "ada@example.com", owner: owner, linking: other, linkingGone: false, newUID: "n", now: self.now)
            } == .emailExists)
        let linked = try RedemptionRules.emailLinkSignIn(
            signIn, email: "ada@example.com", owner: nil, linking: other, linkingGone: false, newUID: "n", now: now)
        #expect(linked.account.uid == "u2" && linked.account.email == "ada@example.com" && !linked.isNew)
        let existing = try RedemptionRules.emailLinkSignIn(
            signIn, email: "ada@example.com", owner: owner, linking: nil, linkingGone: false, newUID: "n", now: now)
        // The owner never proved the address: the password someone set goes, with its sessions.
        #expect(existing.account.uid == "u1" && existing.account.passwordHash == nil && !existing.isNew)
        let created = try RedemptionRules.emailLinkSignIn(
            signIn, email: "ada@example.com", owner: nil, linking: nil, linkingGone: false, newUID: "n", now: now)
        #expect(created.isNew && created.account.uid == "n" && created.account.emailVerified && created.account.emailLinkSignin)
    }

    /// Proving an unproven address ends every credential added while it was unproven: anyone could have linked
    /// their own provider to an account holding someone else's address.
    @Test func provingAnUnprovenAddressUnlinksEveryProviderAndEndsSessions() throws {
        var squatted = account("s", "ada@example.com")
        squatted.providers = ["password", "oidc.attacker"]
        let reset = try RedemptionRules.resetPassword(code(.resetPassword), holder: squatted, passwordHash: "new", now: now)
        #expect(reset.providers == ["password"] && reset.emailVerified && reset.validSince == now.milliseconds)

        let signedIn = try RedemptionRules.emailLinkSignIn(
            code(.signIn), email: "ada@example.com", owner: squatted, linking: nil, linkingGone: false, newUID: "n", now: now)
        #expect(signedIn.account.providers == ["password"] && signedIn.account.passwordHash == nil)
        #expect(signedIn.account.validSince == now.milliseconds)

        var proven = squatted
        proven.emailVerified = true
        let kept = try RedemptionRules.resetPassword(code(.resetPassword), holder: proven, passwordHash: "new", now: now)
        #expect(kept.providers == ["password", "oidc.attacker"], "a proven address's providers were linked by its owner")

        var takenOver = squatted
        takenOver.providers = ["password", "oidc.attacker", "google.com"]
        takenOver.takeOver(by: FederatedIdentity(providerId: "google.com", rawId: "g", email: "ada@example.com", emailVerified: true), now: now)
        #expect(takenOver.providers == ["google.com"] && takenOver.passwordHash == nil)
    }

    @Test func accountKeysAreTakenOnce() {
        let ada = account("u1", "ada@example.com")
        #expect(refusal { try AccountKeyRules.admit(ada, addressHolder: ada, uidHolder: ada) } == .emailExists)
        #expect(refusal { try AccountKeyRules.admit(ada, addressHolder: nil, uidHolder: ada) } == .duplicateLocalID)
        #expect(refusal { try AccountKeyRules.keep(ada, addressHolder: self.account("u2", "ada@example.com")) } == .emailExists)
        #expect(refusal { try AccountKeyRules.keep(ada, addressHolder: ada) } == nil)
        #expect(refusal { try AccountKeyRules.present(nil) } == .userNotFound)
    }
}

import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The named redemption transactions: each consumes its code and applies its effect on the account,
/// or, when the effect is refused, consumes nothing.
@Suite struct RedemptionTests {
    let scratch = ScratchDirectory()
    let now = Date(milliseconds: Date().milliseconds)
    let passwordHash = "pbkdf2-sha256$600000$c2FsdA$aGFzaA"

    // MARK: - Verification

    @Test(arguments: StoreKind.allCases)
    func verificationMarksTheAddressVerifiedAndKeepsSessions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        let code = try Fixture.mint(.verifyEmail, now: now, in: store)
        let (verified, record) = try store.redeemVerification(code, visitor: Fixture.visitor, now: now)
        #expect(record.kind == .verifyEmail)
        #expect(verified.emailVerified)
        #expect(verified.validSince == account.validSince)
        #expect(try store.account(uid: account.uid) == verified)
        #expect(try store.code(code)?.redeemedAt == now)
    }

    @Test(arguments: StoreKind.allCases)
    func changeOfEmailMovesTheAccountAndEndsItsSessions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        let code = try Fixture.mint(.verifyAndChangeEmail, newEmail: "ada@new.example", now: now, in: store)
        let later = Date(milliseconds: now.milliseconds + 5000)
        let (moved, _) = try store.redeemVerification(code, visitor: Fixture.visitor, now: later)
        #expect(moved.uid == account.uid)
        #expect(moved.email == "ada@new.example")
        #expect(moved.emailVerified)
        #expect(moved.validSince == later.milliseconds)
        #expect(try store.account(email: "ada@example.com") == nil)
        #expect(try store.account(email: "ada@new.example") == moved)
    }

    @Test(arguments: StoreKind.allCases)
    func changeToAnAddressAnotherAccountOwnsIsRefusedAndKeepsTheCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(now: now)
        try store.createAccount(account)
        try store.createAccount(Fixture.account("ada@new.example", now: now))
        let code = try Fixture.mint(.verifyAndChangeEmail, newEmail: "ada@new.example", now: now, in: store)
        let error = #expect(throws: HeraldError.self) { try store.redeemVerification(code, visitor: Fixture.visitor, now: now) }
        #expect(error?.code == .emailExists)
        #expect(try store.account(uid: account.uid) == account)
        #expect(try store.code(code)?.redeemedAt == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func verificationWithoutAnAccountIsEmailNotFoundAndKeepsTheCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.verifyEmail, now: now, in: store)
        let error = #expect(throws: HeraldError.self) { try store.redeemVerification(code, visitor: Fixture.visitor, now: now) }
        #expect(error?.code == .emailNotFound)
        try store.createAccount(Fixture.account(now: now))
        #expect(try store.redeemVerification(code, visitor: Fixture.visitor, now: now).account.emailVerified)
    }

    @Test(arguments: StoreKind.allCases)
    func disabledAccountIsRefusedWithUserDisabled(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account(disabled: true, now: now))
        let verify = try Fixture.mint(.verifyEmail, now: now, in: store)
        let reset = try Fixture.mint(.resetPassword, now: now, in: store)
        let signIn = try Fixture.mint(.signIn, now: now, in: store)
        let verification = #expect(throws: HeraldError.self) { try store.redeemVerification(verify, visitor: Fixture.visitor, now: now) }
        #expect(verification?.code == .userDisabled)
        let resetError = #expect(throws: HeraldError.self) {
            try store.redeemPasswordReset(reset, passwordHash: passwordHash, visitor: Fixture.visitor, now: now)
        }
        #expect(resetError?.code == .userDisabled)
        let signInError = #expect(throws: HeraldError.self) {
            try store.redeemEmailLinkSignIn(
                signIn, email: "ada@example.com", linkingTo: nil, newUID: "unused", visitor: Fixture.visitor, now: now)
        }
        #expect(signInError?.code == .userDisabled)
    }

    @Test(arguments: StoreKind.allCases)
    func eachTransactionRefusesTheCodesOfOtherActions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        try store.createAccount(Fixture.account(now: now))
        let reset = try Fixture.mint(.resetPassword, now: now, in: store)
        let verify = try Fixture.mint(.verifyEmail, now: now, in: store)
        let verification = #expect(throws: HeraldError.self) { try store.redeemVerification(reset, visitor: Fixture.visitor, now: now) }
        #expect(verification?.code == .invalidOOBCode)
        let resetError = #expect(throws: HeraldError.self) {
            try store.redeemPasswordReset(verify, passwordHash: passwordHash, visitor: Fixture.visitor, now: now)
        }
        #expect(resetError?.code == .invalidOOBCode)
        let signIn = #expect(throws: HeraldError.self) {
            try store.redeemEmailLinkSignIn(verify, email: "ada@example.com", linkingTo: nil, newUID: "x", visitor: Fixture.visitor, now: now)
        }
        #expect(signIn?.code == .invalidOOBCode)
        #expect(try store.code(reset)?.redeemedAt == nil)
        #expect(try store.code(verify)?.redeemedAt == nil)
    }

    // MARK: - Password reset

    @Test(arguments: StoreKind.allCases)
    func passwordResetSetsTheHashProvesTheAddressAndEndsSessions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(passwordHash: "pbkdf2-sha256$1$old$old", now: now)
        try store.createAccount(account)
        let code = try Fixture.mint(.resetPassword, now: now, in: store)
        let later = Date(milliseconds: now.milliseconds + 5000)
        let reset = try store.redeemPasswordReset(code, passwordHash: passwordHash, visitor: Fixture.visitor, now: later)
        #expect(reset.passwordHash == passwordHash)
        #expect(reset.emailVerified)
        #expect(reset.validSince == later.milliseconds)
        #expect(reset.providers.contains("password"))
        #expect(try store.account(uid: account.uid) == reset)
        #expect(try store.code(code)?.redeemedAt == later)
    }

    @Test(arguments: StoreKind.allCases)
    func passwordResetWithoutAnAccountLeavesTheCodeUnused(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.resetPassword, now: now, in: store)
        let error = #expect(throws: HeraldError.self) {
            try store.redeemPasswordReset(code, passwordHash: passwordHash, visitor: Fixture.visitor, now: now)
        }
        #expect(error?.code == .emailNotFound)
        try store.createAccount(Fixture.account(now: now))
        #expect(try store.redeemPasswordReset(code, passwordHash: passwordHash, visitor: Fixture.visitor, now: now).passwordHash == passwordHash)
    }

    // MARK: - Email-link sign-in

    @Test(arguments: StoreKind.allCases)
    func signInToANewAddressCreatesTheAccountWithTheGivenUID(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let result = try store.redeemEmailLinkSignIn(
            code, email: "Ada@Example.com", linkingTo: nil, newUID: "uid-new", visitor: Fixture.visitor, now: now)
        #expect(result.isNewUser)
        #expect(result.account.uid == "uid-new")
        #expect(result.account.email == "ada@example.com")
        #expect(result.account.emailVerified)
        #expect(result.account.emailLinkSignin)
        #expect(result.account.passwordHash == nil)
        #expect(result.account.lastLoginAt == now)
        #expect(try store.account(uid: "uid-new") == result.account)
    }

    @Test(arguments: StoreKind.allCases)
    func signInToAnUnverifiedAccountDropsItsPasswordAndSessions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(passwordHash: passwordHash, now: now)
        try store.createAccount(account)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let later = Date(milliseconds: now.milliseconds + 5000)
        let result = try store.redeemEmailLinkSignIn(
            code, email: "ada@example.com", linkingTo: nil, newUID: "unused", visitor: Fixture.visitor, now: later)
        #expect(!result.isNewUser)
        #expect(result.account.uid == account.uid)
        #expect(result.account.passwordHash == nil)
        #expect(result.account.validSince == later.milliseconds)
        #expect(result.account.emailVerified)
        #expect(try store.account(uid: account.uid) == result.account)
        #expect(try store.account(uid: "unused") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func signInToAVerifiedAccountKeepsItsPasswordAndSessions(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let account = Fixture.account(verified: true, passwordHash: passwordHash, now: now)
        try store.createAccount(account)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let result = try store.redeemEmailLinkSignIn(
            code, email: "ada@example.com", linkingTo: nil, newUID: "unused", visitor: Fixture.visitor, now: now)
        #expect(result.account.passwordHash == passwordHash)
        #expect(result.account.validSince == account.validSince)
        #expect(result.account.emailLinkSignin)
    }

    @Test(arguments: StoreKind.allCases)
    func linkingGivesTheAddressToTheSignedInAccount(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let anonymous = Fixture.account(nil, uid: "uid-anonymous", now: now)
        try store.createAccount(anonymous)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let result = try store.redeemEmailLinkSignIn(
            code, email: "ada@example.com", linkingTo: "uid-anonymous", newUID: "unused", visitor: Fixture.visitor, now: now)
        #expect(!result.isNewUser)
        #expect(result.account.uid == "uid-anonymous")
        #expect(result.account.email == "ada@example.com")
        #expect(result.account.emailVerified)
        #expect(try store.account(email: "ada@example.com")?.uid == "uid-anonymous")
        #expect(try store.accounts().count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func linkingAnAddressAnotherAccountOwnsIsEmailExistsAndKeepsTheCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let owner = Fixture.account(uid: "uid-owner", now: now)
        let other = Fixture.account("other@example.com", uid: "uid-other", now: now)
        try store.createAccount(owner)
        try store.createAccount(other)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let error = #expect(throws: HeraldError.self) {
            try store.redeemEmailLinkSignIn(
                code, email: "ada@example.com", linkingTo: "uid-other", newUID: "unused", visitor: Fixture.visitor, now: now)
        }
        #expect(error?.code == .emailExists)
        #expect(try store.account(uid: "uid-owner") == owner)
        #expect(try store.account(uid: "uid-other") == other)
        #expect(try store.code(code)?.redeemedAt == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func signInWithAnotherAddressIsInvalidEmailAndKeepsTheCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let error = #expect(throws: HeraldError.self) {
            try store.redeemEmailLinkSignIn(
                code, email: "eve@example.com", linkingTo: nil, newUID: "uid-eve", visitor: Fixture.visitor, now: now)
        }
        #expect(error?.code == .invalidEmail)
        #expect(try store.code(code)?.redeemedAt == nil)
        #expect(try store.accounts().isEmpty)
        let result = try store.redeemEmailLinkSignIn(
            code, email: "ada@example.com", linkingTo: nil, newUID: "uid-ada", visitor: Fixture.visitor, now: now)
        #expect(result.account.uid == "uid-ada")
    }

    @Test(arguments: StoreKind.allCases)
    func linkingToAnAccountThatIsGoneIsUserNotFoundAndKeepsTheCode(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        let code = try Fixture.mint(.signIn, now: now, in: store)
        let error = #expect(throws: HeraldError.self) {
            try store.redeemEmailLinkSignIn(
                code, email: "ada@example.com", linkingTo: "uid-deleted", newUID: "uid-new", visitor: Fixture.visitor, now: now)
        }
        #expect(error?.code == .userNotFound)
        #expect(try store.code(code)?.redeemedAt == nil)
        #expect(try store.accounts().isEmpty)
    }
}

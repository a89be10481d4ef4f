import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct CredentialTests {
    let signer = TokenSigner(key: SymmetricKey(size: .bits256), projectID: "herald-demo")

    @Test func idTokenRoundTripsAndRejectsTampering() throws {
        let token = signer.issue(uid: "u1", email: "ada@example.com", emailVerified: true, provider: "password")
        #expect(try signer.verify(token).uid == "u1")
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(#"{"sub":"admin","aud":"herald-demo","exp":9999999999,"herald_iat_ms":1}"#.utf8))
        let error = #expect(throws: HeraldError.self) { try signer.verify(parts.joined(separator: ".")) }
        #expect(error?.code == .invalidIDToken)
        let other = TokenSigner(key: SymmetricKey(size: .bits256), projectID: "herald-demo")
        #expect(throws: HeraldError.self) { try other.verify(token) }
    }

    @Test func expiredIDTokenIsTokenExpired() {
        let token = signer.issue(uid: "u1", email: nil, emailVerified: false, provider: "password", now: Date(timeIntervalSinceNow: -7200))
        let error = #expect(throws: HeraldError.self) { try signer.verify(token) }
        #expect(error?.code == .tokenExpired)
    }

    @Test func passwordHashesAreSaltedAndVerify() throws {
        let first = try PasswordHasher.hash("correct horse")
        let second = try PasswordHasher.hash("correct horse")
        #expect(first != second)
        #expect(!first.contains("correct horse"))
        #expect(PasswordHasher.verify("correct horse", against: first))
        #expect(!PasswordHasher.verify("wrong horse", against: first))
        #expect(!PasswordHasher.verify("correct horse", against: "garbage"))
        let error = #expect(throws: HeraldError.self) { try PasswordHasher.checkStrength("12345") }
        #expect(error?.description == "WEAK_PASSWORD : Password should be at least 6 characters")
    }
}

import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct ServerSupportTests {
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

    @Test func jsonBodyRejectsUnknownFieldsAndWrongTypes() throws {
        let body = try JSONBody(
            Data(#"{"request_type":"VERIFY_EMAIL","returnOobLink":true,"email":null}"#.utf8), allowed: ["requestType", "returnOobLink", "email"])
        #expect(try body.string("requestType") == "VERIFY_EMAIL")
        #expect(try body.bool("returnOobLink") == true)
        #expect(try body.string("email") == nil)
        #expect(throws: HeraldError.self) { try JSONBody(Data(#"{"nope":1}"#.utf8), allowed: ["email"]) }
        #expect(throws: HeraldError.self) { try JSONBody(Data("[1]".utf8), allowed: ["email"]) }
        #expect(throws: HeraldError.self) { try JSONBody(Data("{".utf8), allowed: ["email"]) }
        let typed = try JSONBody(Data(#"{"email":5,"returnOobLink":1}"#.utf8), allowed: ["email", "returnOobLink"])
        #expect(throws: HeraldError.self) { try typed.string("email") }
        #expect(throws: HeraldError.self) { try typed.bool("returnOobLink") }
    }

    @Test func routesEveryPathFamily() {
        #expect(IdentityToolkit.route("/v1/accounts:sendOobCode")! == (nil, "sendOobCode"))
        #expect(IdentityToolkit.route("/identitytoolkit.googleapis.com/v1/accounts:lookup")! == (nil, "lookup"))
        #expect(IdentityToolkit.route("/v1/projects/p1/accounts:update")! == ("p1", "update"))
        #expect(IdentityToolkit.route("/identitytoolkit.googleapis.com/v1/projects/p1/accounts")! == ("p1", "create"))
        #expect(IdentityToolkit.route("/v2/accounts:lookup") == nil)
        #expect(IdentityToolkit.route("/v1/other") == nil)
    }

    @Test func csvLinesHandleQuotes() throws {
        #expect(try CSVLine.parse(#"a,"b,c","d ""e""",,f"#) == ["a", "b,c", #"d "e""#, "", "f"])
        #expect(try CSVLine.parse("a,,żółw,") == ["a", "", "żółw", ""])
        #expect(throws: HeraldError.self) { try CSVLine.parse(#"a,"b"#) }
    }

    @Test func formParametersDecodePlusAndPercent() {
        let values = ActionPages.parameters("a=1+2&b=%C5%BC%26&a=ignored&c")
        #expect(values == ["a": "1 2", "b": "ż&", "c": ""])
    }
}

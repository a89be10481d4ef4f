import HeraldCore
import Testing

@Suite struct EmailAddressTests {
    @Test(arguments: ["ada@example.com", "a.b+tag@sub.example.co.uk", "x@localhost", "o'neil@example.com"])
    func acceptsCommonAddresses(_ raw: String) throws {
        #expect(try EmailAddress(raw).value == raw.lowercased())
    }

    @Test(arguments: [
        "", "plain", "@example.com", "a@", "a@@example.com", "a b@example.com", ".a@example.com", "a.@example.com",
        "a..b@example.com", "a@-example.com", "a@exa_mple.com", "a@example.com\r\nBcc: x@y.z", "żółw@example.com",
        String(repeating: "a", count: 65) + "@example.com",
    ])
    func rejectsInvalidAddresses(_ raw: String) {
        #expect(throws: HeraldError.self) { try EmailAddress(raw) }
    }

    @Test func canonicalFormIsLowerCase() throws {
        #expect(try EmailAddress("Ada@Example.COM").value == "ada@example.com")
    }

    @Test func errorNamesTheProblemWithoutRawControlCharacters() {
        let error = #expect(throws: HeraldError.self) { try EmailAddress("a\r\nb@example.com") }
        #expect(error?.code == .invalidEmail)
        #expect(error?.description.contains("\r") == false)
        #expect(error?.description.contains("\\r") == true)
    }

    @Test func displayNameRejectsLineBreaks() {
        #expect(throws: HeraldError.self) { try DisplayName.validate("Eve\r\nBcc: victim@example.com") }
        #expect(throws: HeraldError.self) { try DisplayName.validate("Eve\nX") }
        #expect(throws: HeraldError.self) { try DisplayName.validate(String(repeating: "x", count: 257)) }
        #expect(throws: Never.self) { try DisplayName.validate("Zażółć Gęślą") }
    }
}

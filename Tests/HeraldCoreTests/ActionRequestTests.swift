import HeraldCore
import Testing

@Suite struct ActionRequestTests {
    let links = HeraldConfiguration.Links()

    @Test func verifyAndChangeEmailGoesToTheNewAddress() throws {
        let request = try ActionRequest(kind: .verifyAndChangeEmail, email: "old@example.com", newEmail: "New@Example.com", links: links)
        #expect(request.recipient.value == "new@example.com")
        #expect(request.email.value == "old@example.com")
    }

    @Test func verifyAndChangeEmailNeedsTheNewAddress() {
        let error = #expect(throws: HeraldError.self) { try ActionRequest(kind: .verifyAndChangeEmail, email: "a@example.com", links: links) }
        #expect(error?.code == .missingNewEmail)
    }

    @Test func defaultsToTheConfiguredLocale() throws {
        #expect(try ActionRequest(kind: .verifyEmail, email: "a@example.com", links: links).locale.value == "en")
        #expect(try ActionRequest(kind: .verifyEmail, email: "a@example.com", locale: "pl-pl", links: links).locale.value == "pl-PL")
    }

    @Test func rejectsABadDisplayName() {
        let error = #expect(throws: HeraldError.self) {
            try ActionRequest(kind: .verifyEmail, email: "a@example.com", displayName: "Eve\r\nBcc: x@example.com", links: links)
        }
        #expect(error?.code == .invalidDisplayName)
    }
}

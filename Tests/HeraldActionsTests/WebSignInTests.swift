import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct WebSignInTests {
    static let web = [
        "apiKey": "k", "providerId": "google.com", "appName": "[DEFAULT]", "authType": "signInViaPopup", "eventId": "12345",
        "redirectUrl": "http://localhost:5173/login?next=%2F", "v": "12.0.0",
    ]
    static let domains = ["localhost", "app.example.com"]

    @Test func theJSSDKsQueryReturnsToItsPageWithASessionHeraldMade() throws {
        let start = try HandlerStart(query: Self.web.merging(["tid": "tenant-1"]) { $1 }, apiKey: "k", authorizedDomains: Self.domains)
        guard case .web(let page) = start.flow.app else {
            Issue.record("not a web flow: \(start.flow.app)")
            return
        }
        #expect(page.redirectURL == "http://localhost:5173/login?next=%2F" && page.origin == "http://localhost:5173")
        #expect(page.appName == "[DEFAULT]" && page.tenantId == "tenant-1")
        #expect(start.flow.session.sent.count >= 32 && !start.flow.session.hashed)
        let other = try HandlerStart(query: Self.web, apiKey: "k", authorizedDomains: Self.domains)
        #expect(other.flow.session.sent != start.flow.session.sent)
        // localhost also admits the loopback addresses, as CORS does.
        let loopback = Self.web.merging(["redirectUrl": "http://127.0.0.1:8080/"]) { $1 }
        #expect(throws: Never.self) { try HandlerStart(query: loopback, apiKey: "k", authorizedDomains: Self.domains) }
    }

    @Test func pagesOffTheAuthorizedDomainsAreRefused() {
        for page in [
            "https://evil.example/", "http://localhost.evil.example/", "https://sub.app.example.com/", "https://evil.com\\@app.example.com/",
            "javascript:alert(1)", "", "not a url",
        ] {
            #expect(throws: HeraldError.self, "\(page)") {
                try HandlerStart(query: Self.web.merging(["redirectUrl": page]) { $1 }, apiKey: "k", authorizedDomains: Self.domains)
            }
        }
        let noName = Self.web.filter { $0.key != "appName" }
        #expect(throws: HeraldError.self) { try HandlerStart(query: noName, apiKey: "k", authorizedDomains: Self.domains) }
    }

    @Test func theEventCarriesTheLinkOrTheSDKsErrorAndIsSafeInsideAScript() throws {
        let start = try HandlerStart(query: Self.web, apiKey: "k", authorizedDomains: Self.domains)
        guard case .deliver(let delivery, _) = start.flow.answer(link: "http://h/x?a=</script>", origin: "http://h", cookie: nil, apiKey: "k")
        else {
            Issue.record("not an event page")
            return
        }
        #expect(delivery.popup && delivery.storageKey == "k:[DEFAULT]")
        #expect(delivery.event.urlResponse == "http://h/x?a=</script>" && delivery.event.sessionId == start.flow.session.sent)
        #expect(delivery.event.eventId == "12345" && delivery.event.type == "signInViaPopup" && delivery.event.postBody == "")
        #expect(!delivery.pageJSON.contains("<") && !delivery.pageJSON.contains(">"))
        let page = try JSONSerialization.jsonObject(with: Data(delivery.pageJSON.utf8)) as? [String: Any]
        #expect((page?["event"] as? [String: Any])?["urlResponse"] as? String == "http://h/x?a=</script>")
        #expect(page?["origin"] as? String == "http://localhost:5173")

        let redirect = try HandlerStart(
            query: Self.web.merging(["authType": "linkViaRedirect"]) { $1 }, apiKey: "k", authorizedDomains: Self.domains)
        let refused = HeraldError(.webContextCancelled, "no")
        guard case .deliver(let failure, let cookie) = redirect.flow.answer(error: refused, origin: "http://h", cookie: "", apiKey: "k") else {
            Issue.record("not an event page")
            return
        }
        #expect(!failure.popup && cookie == "")
        #expect(failure.event.error?.code == "auth/web-context-cancelled" && failure.event.urlResponse == nil)
    }

    @Test func anAssertionIsSpentOnceUntilItWouldHaveExpired() {
        let spent = SpentAssertions()
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(spent.spend("a", until: now.addingTimeInterval(300), now: now))
        #expect(!spent.spend("a", until: now.addingTimeInterval(300), now: now.addingTimeInterval(10)))
        #expect(spent.spend("b", until: now.addingTimeInterval(300), now: now))
        #expect(spent.spend("a", until: now.addingTimeInterval(900), now: now.addingTimeInterval(301)))
    }
}

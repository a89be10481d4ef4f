import Testing

@testable import HeraldServer

/// The action pages allow their form to lead to the continue URL's origin, and to nothing else.
@Suite struct PageOriginTests {
    @Test(arguments: [
        ("https://app.example.com/done?x=1#f", "https://app.example.com"),
        ("http://localhost:5173/finish", "http://localhost:5173"),
        ("HTTPS://App.Example.com", "https://App.Example.com"),
    ])
    func theOriginIsSchemeHostAndPort(_ url: String, _ origin: String) {
        #expect(PageRenderer.origin(of: url) == origin)
    }

    @Test(arguments: ["javascript:alert(1)", "data:text/html,x", "https://", "app.example.com/x", "https://a b.example.com/"])
    func anythingElseAllowsNothing(_ url: String) {
        #expect(PageRenderer.origin(of: url) == nil)
    }

    @Test func aPageWithAContinueURLLetsItsFormGoThere() {
        let response = PageRenderer.response(html: "<p>", continuingTo: "https://app.example.com/done")
        let policy = response.headers[.contentSecurityPolicy] ?? ""
        #expect(policy.contains("form-action 'self' https://app.example.com;"), "\(policy)")
        #expect(PageRenderer.response(html: "<p>").headers[.contentSecurityPolicy]?.contains("form-action 'self';") == true)
    }
}

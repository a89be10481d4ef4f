import Foundation
import HeraldCore
import Testing

@Suite struct ActionLinkBuilderTests {
    let builder = ActionLinkBuilder(actionURL: "https://demo.firebaseapp.com/__/auth/action", apiKey: "key-123")

    func query(_ link: String) -> [String: String] {
        let items = URLComponents(string: link)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }

    @Test func webLinkHasFirebaseParametersInProductionOrder() {
        let settings = ActionCodeSettings(url: "https://app.example.com/finish?cart=1&x=a b")
        let link = builder.link(for: .resetPassword, code: "abc_DEF-123", settings: settings, lang: "pl")
        #expect(link.hasPrefix("https://demo.firebaseapp.com/__/auth/action?apiKey=key-123&mode=resetPassword&oobCode=abc_DEF-123&continueUrl="))
        #expect(link.hasSuffix("&lang=pl"))
        let parameters = query(link)
        #expect(parameters["continueUrl"] == "https://app.example.com/finish?cart=1&x=a b")
        #expect(parameters["mode"] == "resetPassword")
    }

    @Test func everyActionHasItsMode() {
        let modes = ActionKind.allCases.map { query(builder.link(for: $0, code: "c", settings: ActionCodeSettings(), lang: "en"))["mode"] }
        #expect(modes == ["signIn", "verifyEmail", "resetPassword", "verifyAndChangeEmail", "recoverEmail"])
    }

    @Test func linkWithoutContinueURLOmitsTheParameter() {
        let link = builder.link(for: .verifyEmail, code: "c", settings: ActionCodeSettings(), lang: "en")
        #expect(!link.contains("continueUrl"))
    }

    @Test func handleCodeInAppWithLinkDomainWrapsTheWebLink() {
        let settings = ActionCodeSettings(url: "https://app.example.com/finish?cart=1", handleCodeInApp: true, linkDomain: "Links.Example.com")
        let link = builder.link(for: .signIn, code: "code-1", settings: settings, lang: "de")
        #expect(
            link.hasPrefix(
                "https://links.example.com/__/auth/links?link=https://demo.firebaseapp.com/__/auth/action?apiKey%3Dkey-123%26mode%3DsignIn"))
        let inner = query(link)["link"] ?? ""
        #expect(inner == builder.webLink(for: .signIn, code: "code-1", continueURL: "https://app.example.com/finish?cart=1", lang: "de"))
        #expect(query(inner)["continueUrl"] == "https://app.example.com/finish?cart=1")
    }

    @Test func linkDomainWithoutHandleCodeInAppKeepsTheWebLink() {
        let settings = ActionCodeSettings(url: "https://app.example.com/", linkDomain: "links.example.com")
        #expect(builder.link(for: .verifyEmail, code: "c", settings: settings, lang: "en").hasPrefix("https://demo.firebaseapp.com/"))
    }
}

import Foundation
import HeraldCore
import Testing

@testable import HeraldServer

@Suite struct ActionPageTests {
    static let templates = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../../templates").path
    let pages: PageRenderer

    init() throws {
        pages = try PageRenderer(directory: Self.templates, defaultLocale: try LocaleTag("en"), appName: "Herald Test")
    }

    @Test func aLinkNeedsAKnownModeACodeAndThisProjectsKey() {
        let link = ActionParameters(mode: "verifyEmail", oobCode: "c", apiKey: "key")
        #expect(link.action(apiKey: "key")?.kind == .verifyEmail)
        #expect(link.action(apiKey: "other") == nil)
        #expect(ActionParameters(mode: "launch", oobCode: "c", apiKey: "key").action(apiKey: "key") == nil)
        #expect(ActionParameters(mode: "signIn", oobCode: "", apiKey: "key").action(apiKey: "key") == nil)
    }

    @Test func pagesAreLocalizedWithAFallback() {
        #expect(pages.resolve("pl-PL").value == "pl")
        #expect(pages.resolve("xx").value == "en")
        let polish = pages.render(.error, lang: "pl", message: "expired_code")
        #expect(polish.contains(#"lang="pl""#) && polish.contains(#"dir="ltr""#))
        #expect(pages.render(.error, lang: "fa", message: "expired_code").contains(#"dir="rtl""#))
    }

    @Test func formsCarryTheirHiddenFieldsEscaped() {
        let form = PageForm(
            mode: "resetPassword", oobCode: #"<script>"x"</script>"#, apiKey: "key", csrfToken: "token", continueUrl: nil,
            email: "ada@example.com")
        let html = pages.render(.resetForm, lang: "en", form: form)
        #expect(html.contains(#"name="csrfToken" value="token""#))
        #expect(html.contains("ada@example.com"))
        #expect(!html.contains("<script>") && !html.contains(#"name="continueUrl""#))
        #expect(html.contains(#"minlength="6""#))
    }

    @Test(arguments: ["en", "de", "pl", "id", "fa"])
    func theRecoverPageNamesBothAddressesInEveryLocale(_ lang: String) throws {
        let strings =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Self.templates + "/pages/strings/\(lang).json"))) as? [String: String]
        let button = try #require(strings?["button_recover"])
        var form = PageForm(mode: "recoverEmail", oobCode: "c0de", apiKey: "key", csrfToken: "token", continueUrl: nil)
        form.email = "ada@example.com"
        form.newEmail = "mallory@example.com"
        let html = pages.render(.recoverConfirm, lang: lang, form: form)
        #expect(html.contains(#"lang="\#(lang)""#))
        #expect(html.contains("ada@example.com") && html.contains("mallory@example.com"))
        #expect(html.contains(button) && html.contains(#"name="mode" value="recoverEmail""#))
        #expect(!html.contains("{{"))
    }

    @Test func handingOverACodeKeepsTheContinueURLsParameters() {
        let response = ActionPagesController.redirect(
            handingOver: "c0de", .verifyEmail, to: "https://app.example.com/finish?step=2", apiKey: "key", lang: "de")
        #expect(response.status == .seeOther)
        #expect(
            response.headers[.location] == "https://app.example.com/finish?step=2&apiKey=key&oobCode=c0de&mode=verifyEmail&lang=de")
    }
}

import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

/// Templates edited in the console replace the files' for their action and locale only.
@Suite struct TemplateOverridesTests {
    let library: TemplateLibrary

    init() throws {
        library = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path,
            defaultLocale: LocaleTag("en"))
    }

    @Test func aRevisionReplacesItsTemplateAndNoOther() throws {
        let en = try LocaleTag("en")
        let revision = TemplateRevision(
            id: 7, kind: .resetPassword, locale: en,
            parts: TemplateParts(
                subject: "New {{appName}}", html: "<p>{{link}}</p>", text: "Go: {{link}}"), author: "a",
            createdAt: Date())
        let edited = try library.overriding([revision])
        let variables = ["appName": "Herald", "link": "https://x.test/l"]
        let content = edited.render(.resetPassword, locale: en, variables: variables)
        #expect(
            content.subject == "New Herald" && content.text == "Go: https://x.test/l"
                && content.html.contains("<p>https://x.test/l</p>"))
        #expect(
            edited.render(.resetPassword, locale: try LocaleTag("de"), variables: variables)
                == library.render(
                    .resetPassword, locale: try LocaleTag("de"), variables: variables))
        #expect(
            edited.render(.verifyEmail, locale: en, variables: variables)
                == library.render(.verifyEmail, locale: en, variables: variables))
        #expect(
            library.render(.resetPassword, locale: en, variables: variables).subject != "New Herald",
            "the original is unchanged")
        let toFile = TemplateRevision(
            kind: .resetPassword, locale: en, parts: nil, author: "a", createdAt: Date())
        #expect(
            try library.overriding([toFile]).render(.resetPassword, locale: en, variables: variables)
                .subject != "New Herald")
    }

    @Test func aRevisionThatDoesNotParseIsRefusedWithTheRenderersError() throws {
        let broken = TemplateRevision(
            kind: .resetPassword, locale: try LocaleTag("en"),
            parts: TemplateParts(subject: "x", html: "{{#open}}", text: "t"),
            author: "a", createdAt: Date())
        let error = try #require(throws: HeraldError.self) { try library.overriding([broken]) }
        #expect(
            error.code == .templateError
                && error.description.contains("reset-password/en/body.html.mustache"))
    }
}

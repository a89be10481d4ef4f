import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldMail

/// The code to type in every action's mail and locale: large in HTML, on its own line in text, and absent from mail
/// that carries none.
@Suite struct TypedCodeMailTests {
    func composer(_ typedCodes: HeraldConfiguration.Policy.TypedCodes) throws -> MessageComposer {
        var configuration = HeraldConfiguration()
        configuration.policy.typedCodes = typedCodes
        let templates = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        return try MessageComposer(configuration: configuration, templates: templates, mailKey: SymmetricKey(size: .bits256))
    }

    @Test func everyActionAndLocaleShowsTheCodeWhenTheMailCarriesOne() throws {
        let composer = try composer(.all)
        for kind in [ActionKind.signIn, .verifyEmail, .resetPassword, .verifyAndChangeEmail] {
            for locale in ["en", "de", "pl", "id", "fa"] {
                var input = try composer.sampleInput(kind, locale: LocaleTag(locale), links: HeraldConfiguration.Links())
                input.typedCode = "482913"
                let content = composer.content(input)
                #expect(content.text.contains("\n    482913\n"), "\(kind) \(locale)")
                #expect(content.html.contains(#"<span dir="ltr" style="display: inline-block;"#), "\(kind) \(locale)")
                #expect(content.html.contains(">482913</span>"), "\(kind) \(locale)")
                input.typedCode = nil
                let plain = composer.content(input)
                #expect(!plain.text.contains("482913") && !plain.html.contains("font-size: 28px"), "\(kind) \(locale)")
            }
        }
    }

    @Test func previewsShowASampleCodeOnlyWhileTypedCodesAreOn() throws {
        let on = try composer(.request)
        let sample = try on.sampleInput(.resetPassword, locale: LocaleTag("en"), links: HeraldConfiguration.Links())
        #expect(sample.typedCode?.count == 6)
        #expect(try on.sampleInput(.recoverEmail, locale: LocaleTag("en"), links: HeraldConfiguration.Links()).typedCode == nil)
        #expect(try composer(.off).sampleInput(.signIn, locale: LocaleTag("en"), links: HeraldConfiguration.Links()).typedCode == nil)
    }
}

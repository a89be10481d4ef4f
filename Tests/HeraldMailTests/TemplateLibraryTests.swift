import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

@Suite struct TemplateLibraryTests {
    let library: TemplateLibrary
    static let locales = ["en", "de", "pl", "id", "fa"]

    init() throws {
        library = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
    }

    func variables(_ extra: [String: String] = [:]) -> [String: String] {
        [
            "link": "https://demo.firebaseapp.com/__/auth/action?apiKey=k&mode=signIn&oobCode=CODE&lang=en",
            "email": "ada@example.com", "newEmail": "new@example.com", "displayName": "Ada", "appName": "Herald Test",
            "expiresIn": "6 hours", "expiresInHours": "6", "requestedAt": "2026-11-22 07:32 UTC",
        ].merging(extra) { _, new in new }
    }

    @Test(arguments: ActionKind.allCases)
    func everyLocaleRendersTheLinkInBothBodies(_ kind: ActionKind) throws {
        for locale in Self.locales {
            let content = library.render(kind, locale: try LocaleTag(locale), variables: variables())
            #expect(content.locale.value == locale)
            #expect(!content.subject.isEmpty && !content.subject.contains("\n"), "\(kind) \(locale) subject")
            #expect(content.text.contains("oobCode=CODE&lang=en"), "\(kind) \(locale) text link")
            #expect(content.html.contains("oobCode=CODE&amp;lang=en"), "\(kind) \(locale) html link")
            #expect(content.html.contains("<html"), "\(kind) \(locale) layout")
            #expect(content.html.contains("Herald Test"))
            #expect(!content.text.contains("{{") && !content.html.contains("{{") && !content.subject.contains("{{"))
        }
    }

    @Test func signInSubjectsCarryTheRequestTime() throws {
        for locale in Self.locales {
            let content = library.render(.signIn, locale: try LocaleTag(locale), variables: variables())
            #expect(content.subject.contains("2026-11-22 07:32"), "\(locale): \(content.subject)")
        }
    }

    @Test func localeFallsBackToLanguageThenDefault() throws {
        #expect(library.resolve(.verifyEmail, try LocaleTag("pl-PL")).value == "pl")
        #expect(library.resolve(.verifyEmail, try LocaleTag("ja")).value == "en")
        let polish = library.render(.verifyEmail, locale: try LocaleTag("pl-PL"), variables: variables())
        #expect(polish.html.contains("lang=\"pl\""))
    }

    @Test func persianLayoutIsRightToLeft() throws {
        let content = library.render(.resetPassword, locale: try LocaleTag("fa"), variables: variables())
        #expect(content.html.contains("dir=\"rtl\""))
        #expect(content.subject.unicodeScalars.contains { (0x0600...0x06FF).contains($0.value) })
    }

    @Test func htmlEscapesVariablesAndTextKeepsThemRaw() throws {
        let content = library.render(.verifyEmail, locale: try LocaleTag("en"), variables: variables(["displayName": "<b>Eve & Co</b>"]))
        #expect(content.html.contains("&lt;b&gt;Eve &amp; Co&lt;/b&gt;"))
        #expect(!content.html.contains("<b>Eve"))
        #expect(content.text.contains("<b>Eve & Co</b>"))
    }

    @Test func missingDefaultLocaleIsAStartupError() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-templates-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "{{$content}}{{/content}}".write(to: directory.appendingPathComponent("layout.html.mustache"), atomically: true, encoding: .utf8)
        let error = #expect(throws: HeraldError.self) { try TemplateLibrary(directory: directory.path, defaultLocale: LocaleTag("en")) }
        #expect(error?.code == .templateError)
    }
}

@Suite struct CompiledTemplateTests {
    @Test func compiledRenderingMatchesMustacheForEveryTemplate() throws {
        let library = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        let tricky = [
            "link": "https://demo.firebaseapp.com/__/auth/action?apiKey=k&mode=signIn&oobCode=a<b>\"c'&lang=en",
            "email": "o'neil&co@example.com", "newEmail": "new@example.com", "displayName": "<Zoë & \"Ann\">",
            "appName": "Herald & Co", "expiresIn": "6 hours", "expiresInHours": "6", "requestedAt": "2026-11-22 07:32 UTC",
        ]
        var withoutName = tricky
        withoutName["displayName"] = nil
        for kind in ActionKind.allCases {
            for locale in ["en", "de", "pl", "id", "fa"] {
                for variables in [tricky, withoutName] {
                    let tag = try LocaleTag(locale)
                    let compiled = library.render(kind, locale: tag, variables: variables)
                    let direct = library.renderThroughMustache(kind, locale: tag, variables: variables)
                    #expect(compiled == direct, "\(kind) \(locale) displayName: \(variables["displayName"] ?? "-")")
                }
            }
        }
    }

    /// The pre-encoded bodies decode to exactly the rendered text, with lines of at most 76 octets and no line
    /// starting with a dot, whatever the variables hold (a long link, "=", spaces at the ends, a leading dot).
    @Test func preEncodedBodiesDecodeToTheRenderedText() throws {
        let library = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        let long = "https://demo.firebaseapp.com/__/auth/action?apiKey=k&mode=signIn&oobCode=" + String(repeating: "Ab9-_", count: 30)
        let variables = [
            "link": long + "&continueUrl=https%3A%2F%2Fa.example%2F%3Fx%3D1&lang=en", "email": ".dot= start@example.com",
            "newEmail": "new@example.com", "displayName": " Zoë =\tŁukasz ", "appName": "Herald & Co", "expiresIn": "6 hours",
            "expiresInHours": "6", "requestedAt": "2026-11-22 07:32 UTC",
        ]
        var encodedSome = false
        for kind in ActionKind.allCases {
            for locale in ["en", "de", "pl", "id", "fa"] {
                let entry = library.compiled(kind, locale: try LocaleTag(locale), names: variables.keys.sorted())
                let rendered = entry.render(variables)
                for (encoded, text) in [(entry.encodedHTML, rendered.html), (entry.encodedText, rendered.text)] {
                    guard let encoded else { continue }
                    encodedSome = true
                    var out: [UInt8] = []
                    encoded.render(variables, into: &out)
                    let lines = String(decoding: out, as: UTF8.self).components(separatedBy: "\r\n")
                    #expect(lines.allSatisfy { $0.utf8.count <= 76 && !$0.hasPrefix(".") }, "\(kind) \(locale)")
                    let decoded = MailMessageTests.decodeQuotedPrintable(String(decoding: out, as: UTF8.self))
                    let expected = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
                    #expect(decoded == expected + "\r\n", "\(kind) \(locale)")
                }
            }
        }
        #expect(encodedSome)
    }

    /// A value with a CR, or one that makes the body mostly non-ASCII, sends the body the whole-text way, as before.
    @Test func bodiesThePreEncodedPartsCannotWriteAreEncodedWhole() throws {
        let library = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        var variables = ["link": "https://a.example/x?oobCode=c", "email": "ada@example.com", "appName": "Herald"]
        for name in ["expiresIn", "expiresInHours", "requestedAt"] { variables[name] = "1" }
        let entry = library.compiled(.verifyEmail, locale: try LocaleTag("en"), names: variables.keys.sorted())
        let text = try #require(entry.encodedText)
        #expect(text.fits(variables))
        var withCR = variables
        withCR["appName"] = "Herald\r"
        #expect(!text.fits(withCR))
        var mostlyPersian = variables
        mostlyPersian["appName"] = String(repeating: "سلام ", count: 2000)
        #expect(!text.fits(mostlyPersian))
        #expect(BodyEncoding.choose(for: entry.text.render(mostlyPersian)) == .base64)
    }
}

import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

/// Plural forms of the validity sentence in each locale, and the visible unsubscribe line of campaign mail.
@Suite struct CampaignMailTests {
    let key = SymmetricKey(data: Array(repeating: UInt8(7), count: 32))

    @Test func pluralCategoriesFollowCLDR() {
        #expect([1, 2, 0, 21].map { PluralCategory.of($0, language: "en") } == [.one, .other, .other, .other])
        #expect([1, 2, 0].map { PluralCategory.of($0, language: "de") } == [.one, .other, .other])
        let polish = [1, 2, 4, 5, 11, 12, 14, 21, 22, 24, 25, 112, 122].map { PluralCategory.of($0, language: "pl") }
        #expect(polish == [.one, .few, .few, .many, .many, .many, .many, .many, .few, .few, .many, .many, .few])
        #expect([0, 1, 2].map { PluralCategory.of($0, language: "fa") } == [.one, .one, .other])
        #expect([1, 2].map { PluralCategory.of($0, language: "id") } == [.other, .other])
        #expect(PluralCategory.few.variables("hours") == ["hoursFew": "1"] && PluralCategory.other.variables("hours").isEmpty)
    }

    func composer(_ change: (inout HeraldConfiguration) -> Void = { _ in }) throws -> MessageComposer {
        var configuration = HeraldConfiguration()
        change(&configuration)
        let templates = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        return try MessageComposer(configuration: configuration, templates: templates, mailKey: key)
    }

    func input(_ kind: ActionKind = .verifyEmail, locale: String = "en", hours: Double = 1, campaign: Int64? = nil, outboxID: Int64? = nil)
        throws -> MessageComposer.Input
    {
        MessageComposer.Input(
            kind: kind, email: try EmailAddress("ada@example.com"), newEmail: nil, displayName: nil, locale: try LocaleTag(locale),
            settings: ActionCodeSettings(), code: "CODE", messageID: "<m@herald.example>", requestedAt: Date(), date: Date(),
            campaignID: campaign, lifetime: hours * 3600, outboxID: outboxID)
    }

    @Test func theValiditySentenceTakesTheNumbersForm() throws {
        let composer = try composer()
        let cases: [(String, Double, String)] = [
            ("en", 1, "expires in 1 hour."), ("en", 6, "expires in 6 hours."), ("de", 1, "ist 1 Stunde gültig"),
            ("de", 72, "ist 72 Stunden gültig"), ("pl", 1, "przez 1 godzinę."), ("pl", 3, "przez 3 godziny."),
            ("pl", 5, "przez 5 godzin."), ("pl", 22, "przez 22 godziny."), ("pl", 12, "przez 12 godzin."),
        ]
        for kind in [ActionKind.verifyEmail, .resetPassword, .signIn, .recoverEmail] {
            for (locale, hours, sentence) in cases {
                var message = try input(kind, locale: locale, hours: hours)
                if kind == .recoverEmail { message.newEmail = try EmailAddress("new@example.com") }
                let content = composer.content(message)
                #expect(content.text.contains(sentence), "\(kind) \(locale) \(hours): \(content.text)")
                #expect(content.html.contains(sentence), "\(kind) \(locale) \(hours)")
                #expect(!content.text.contains("(s)") && !content.text.contains("(n)") && !content.text.contains("godz."))
            }
        }
    }

    @Test func campaignMailShowsAnUnsubscribeLineAndOtherMailNone() throws {
        let composer = try composer { $0.campaigns.unsubscribeURL = "https://auth.example.com/unsubscribe" }
        let token = UnsubscribeToken(key: key).token(for: 17)
        let link = "https://auth.example.com/unsubscribe?token=\(token)"
        for (locale, label) in [("en", "Unsubscribe from these emails"), ("de", "Von diesen E-Mails abmelden"), ("fa", "لغو اشتراک")] {
            for kind in [ActionKind.verifyEmail, .resetPassword, .signIn] {
                let campaign = composer.content(try input(kind, locale: locale, campaign: 3, outboxID: 17))
                #expect(campaign.text.contains("\(label)") && campaign.text.contains(link), "\(kind) \(locale): \(campaign.text)")
                #expect(campaign.html.contains(#"href="\#(link)""#) && campaign.html.contains(label), "\(kind) \(locale)")
                let single = composer.content(try input(kind, locale: locale, outboxID: 18))
                #expect(!single.text.contains("unsubscribe") && !single.html.contains("unsubscribe"), "\(kind) \(locale)")
            }
        }
        // Only a mailto address configured: the line names it.
        let mailto = try self.composer { $0.campaigns.unsubscribeMailto = "leave@example.com" }
        let content = mailto.content(try input(campaign: 3, outboxID: 17))
        #expect(content.text.contains("mailto:leave@example.com?subject=unsubscribe"))
        // Neither: no line.
        let neither = try self.composer().content(try input(campaign: 3, outboxID: 17))
        #expect(!neither.text.contains("Unsubscribe"))
    }
}

import Crypto
import Foundation
import HeraldCore
import Testing

@testable import HeraldMail

/// One-click unsubscribe tokens, and what the composer puts on the envelope and in campaign mail's headers.
@Suite struct UnsubscribeTokenTests {
    let key = SymmetricKey(data: Array(repeating: UInt8(7), count: 32))

    @Test func aTokenNamesItsRowAndNothingElseVerifies() {
        let tokens = UnsubscribeToken(key: key)
        let token = tokens.token(for: 42)
        #expect(token.hasPrefix("42."))
        #expect(token.allSatisfy { $0.isLetter || $0.isNumber || "._-".contains($0) }, "URL-safe as it stands")
        #expect(tokens.outboxID(in: token) == 42)
        #expect(tokens.token(for: 43) != token)
        let other = UnsubscribeToken(key: SymmetricKey(data: Array(repeating: UInt8(8), count: 32)))
        #expect(other.outboxID(in: token) == nil, "another key's token")
        let mac = token.split(separator: ".")[1]
        for forged in ["43.\(mac)", "42.\(mac.dropLast())A", "42", "", ".\(mac)", "-1.\(mac)", "42.\(mac).x", "99999999999999999999.\(mac)"] {
            #expect(tokens.outboxID(in: forged) == nil, "\(forged)")
        }
    }

    func composer(_ change: (inout HeraldConfiguration) -> Void) throws -> MessageComposer {
        var configuration = HeraldConfiguration()
        change(&configuration)
        let templates = try TemplateLibrary(
            directory: CaptureSMTPServer.repositoryRoot.appendingPathComponent("templates").path, defaultLocale: LocaleTag("en"))
        return try MessageComposer(configuration: configuration, templates: templates, mailKey: key)
    }

    func input(campaign: Int64?, outboxID: Int64?) throws -> MessageComposer.Input {
        MessageComposer.Input(
            kind: .verifyEmail, email: try EmailAddress("ada@example.com"), newEmail: nil, displayName: nil, locale: try LocaleTag("en"),
            settings: ActionCodeSettings(), code: "CODE", messageID: "<m@herald.example>", requestedAt: Date(), date: Date(),
            campaignID: campaign, outboxID: outboxID)
    }

    @Test func theEnvelopeSenderNamesTheRowWhenABounceDomainIsSet() throws {
        let verp = try composer { $0.bounces.domain = "bounces.example.com" }
        let composed = try verp.compose(input(campaign: nil, outboxID: 17))
        #expect(VERPAddress(localPart: "bounces", domain: "bounces.example.com", key: key).outboxID(in: composed.envelopeFrom) == 17)
        #expect(try verp.compose(input(campaign: nil, outboxID: nil)).envelopeFrom == "noreply@herald-demo.example", "a preview has no row")
        let plain = try composer { _ in }
        #expect(try plain.compose(input(campaign: nil, outboxID: 17)).envelopeFrom == "noreply@herald-demo.example")
    }

    @Test func campaignMailCarriesASignedOneClickLinkAndTransactionalMailNone() throws {
        let composer = try composer { $0.campaigns.unsubscribeURL = "https://auth.example.com/unsubscribe" }
        let campaign = String(decoding: try composer.compose(input(campaign: 3, outboxID: 17)).bytes, as: UTF8.self)
        let token = UnsubscribeToken(key: key).token(for: 17)
        #expect(campaign.contains("List-Unsubscribe: <https://auth.example.com/unsubscribe?token=\(token)>\r\n"))
        #expect(campaign.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))
        let single = String(decoding: try composer.compose(input(campaign: nil, outboxID: 18)).bytes, as: UTF8.self)
        #expect(!single.contains("List-Unsubscribe"))
    }
}

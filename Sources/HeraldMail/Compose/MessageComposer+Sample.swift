import Foundation
import HeraldCore

extension MessageComposer {
    /// The code in previews and test messages: the action pages answer it as an unknown code.
    public static let sampleCode = "PREVIEW-ONLY-NOT-A-VALID-CODE"

    /// What an outbox row's email needs, with `code` (the row's own, or `sampleCode` for a preview).
    public static func input(for message: OutboxMessage, code: String, typedCode: String? = nil, date: Date) -> Input {
        var input = Input(
            kind: message.kind, email: message.email, newEmail: message.newEmail, displayName: message.displayName,
            locale: message.locale, settings: message.settings, code: code, messageID: message.messageID,
            requestedAt: message.queuedAt, date: date, variables: message.variables, campaignID: message.campaignID,
            lifetime: message.linkLifetime, outboxID: message.id)
        input.typedCode = typedCode
        return input
    }

    /// An action's message with sample data, as `herald templates preview` and the console show it: the link
    /// carries `sampleCode`, which redeems nothing, and a sample typed code unless typed codes are off. `recipient`
    /// replaces the sample address.
    public func sampleInput(
        _ kind: ActionKind, locale: LocaleTag, links: HeraldConfiguration.Links, to recipient: EmailAddress? = nil
    ) throws -> Input {
        let domain = links.authorizedDomains.first ?? "localhost"
        let email = try recipient ?? EmailAddress("ada@example.com")
        let newEmail = kind == .verifyAndChangeEmail ? try recipient ?? EmailAddress("ada.lovelace@example.com") : nil
        var input = Input(
            kind: kind, email: email, newEmail: newEmail, displayName: "Ada Lovelace", locale: locale,
            settings: ActionCodeSettings(url: "https://\(domain)/finish", handleCodeInApp: kind == .signIn),
            code: Self.sampleCode, messageID: "<sample.\(UUID().uuidString.lowercased())@\(from.address.domain)>",
            requestedAt: Date(), date: Date())
        // Previews show the code where the policy may put one; a test send carries a sample that redeems nothing.
        if kind.takesTypedCode { input.typedCode = sampleTypedCode }
        return input
    }
}

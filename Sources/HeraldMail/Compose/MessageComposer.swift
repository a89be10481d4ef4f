import Crypto
import Foundation
import HeraldCore

/// Turns an action (kind, recipient, code, settings) into the bytes of its email.
///
/// Builds the link, renders the localized templates and encodes the MIME message. Pure: it
/// neither reads the ledger nor talks to SMTP.
///
/// ```swift
/// let composer = try MessageComposer(configuration: configuration, templates: library)
/// let message = try composer.compose(input)
/// ```
public struct MessageComposer: Sendable {
    public private(set) var templates: TemplateLibrary
    let linkBuilder: ActionLinkBuilder
    let appName: String
    public let from: Mailbox
    let replyTo: Mailbox?
    let lifetimes: [ActionKind: TimeInterval]
    let campaigns: HeraldConfiguration.Campaigns
    /// Signs each message when `dkim.domain` is set.
    public let dkim: DKIMSigner?
    /// The envelope sender of each message when `bounces.domain` is set: it names the outbox row.
    public let verp: VERPAddress?
    /// Signs the one-click unsubscribe links of campaign mail.
    public let unsubscribeTokens: UnsubscribeToken?
    /// The key of typed codes, under `policy.typedCodes` other than `off`.
    public let typedCodeKey: TypedCodeKey?
    /// What previews show as the typed code (of the configured shape); nil while typed codes are off.
    let sampleTypedCode: String?

    /// `mailKey` signs bounce addresses and unsubscribe links (`tokens.mailKeyFile`); without it, mail goes out
    /// with the From address as envelope sender and campaign mail without a one-click https target.
    public init(configuration: HeraldConfiguration, templates: TemplateLibrary, mailKey: SymmetricKey? = nil) throws {
        self.templates = templates
        if let mailKey, !configuration.bounces.domain.isEmpty {
            verp = VERPAddress(localPart: configuration.bounces.localPart, domain: configuration.bounces.domain, key: mailKey)
        } else {
            verp = nil
        }
        unsubscribeTokens = mailKey.map(UnsubscribeToken.init(key:))
        typedCodeKey = configuration.policy.typedCodes == .off ? nil : mailKey.map(TypedCodeKey.init(key:))
        let policy = configuration.policy
        sampleTypedCode =
            policy.typedCodes == .off
            ? nil
            : String((0..<policy.typedCodeLength).map { policy.typedCodeAlphabet.symbols[($0 * 7 + 4) % policy.typedCodeAlphabet.symbols.count] })
        linkBuilder = ActionLinkBuilder(actionURL: configuration.links.actionURL, apiKey: configuration.project.apiKey)
        appName = configuration.project.appName
        from = try Mailbox(parsing: configuration.smtp.from)
        replyTo = configuration.smtp.replyTo.isEmpty ? nil : try Mailbox(parsing: configuration.smtp.replyTo)
        lifetimes = configuration.links.lifetime
        campaigns = configuration.campaigns
        dkim = try DKIMSigner(configuration: configuration.dkim)
    }

    /// This composer with a campaign's own templates for `kind` (`TemplateLibrary.campaignLibrary`); itself when
    /// `files` is empty.
    public func campaign(_ kind: ActionKind, templates files: [TemplateFile]) throws -> MessageComposer {
        guard !files.isEmpty else { return self }
        var copy = self
        copy.templates = try templates.campaignLibrary(kind, files: files)
        return copy
    }

    /// This composer with templates edited in the console in force (`TemplateLibrary.overriding`); itself when there
    /// are none.
    public func overriding(_ revisions: [TemplateRevision]) throws -> MessageComposer {
        guard !revisions.isEmpty else { return self }
        var copy = self
        copy.templates = try templates.overriding(revisions)
        return copy
    }

    /// What one email needs.
    public struct Input: Sendable {
        public var kind: ActionKind
        public var email: EmailAddress
        public var newEmail: EmailAddress?
        public var displayName: String?
        public var locale: LocaleTag
        public var settings: ActionCodeSettings
        public var code: String
        public var messageID: String
        public var requestedAt: Date
        public var date: Date
        /// Extra template variables (campaign columns); the built-in ones take precedence.
        public var variables: [String: String] = [:]
        /// Set for campaign mail, which carries `List-Unsubscribe`.
        public var campaignID: Int64?
        /// The outbox row: named by the VERP envelope sender and the unsubscribe token (nil for previews).
        public var outboxID: Int64?
        /// The code lifetime when it differs from `links.lifetime`.
        public var lifetime: TimeInterval?
        /// The code to type beside the link, when the mail carries one (`{{typedCode}}`).
        public var typedCode: String?

        public init(
            kind: ActionKind, email: EmailAddress, newEmail: EmailAddress?, displayName: String?, locale: LocaleTag,
            settings: ActionCodeSettings, code: String, messageID: String, requestedAt: Date, date: Date,
            variables: [String: String] = [:], campaignID: Int64? = nil, lifetime: TimeInterval? = nil, outboxID: Int64? = nil
        ) {
            self.outboxID = outboxID
            self.variables = variables
            self.campaignID = campaignID
            self.lifetime = lifetime
            self.kind = kind
            self.email = email
            self.newEmail = newEmail
            self.displayName = displayName
            self.locale = locale
            self.settings = settings
            self.code = code
            self.messageID = messageID
            self.requestedAt = requestedAt
            self.date = date
        }

        /// Where the message goes: the new address for verify-and-change-email, the old one for recover-email.
        public var recipient: EmailAddress { kind.recipient(email: email, newEmail: newEmail) }
    }

    /// The message's bytes and its envelope.
    public struct Composed: Sendable {
        public let bytes: [UInt8]
        public let link: String
        public let envelopeFrom: String
        public let recipient: String
    }

    /// The message's bytes, DKIM-signed when configured.
    ///
    /// Bodies whose templates are mostly ASCII are written from pre-encoded parts (`EncodedTemplate`): only
    /// the variables are encoded per message.
    /// - Throws: `INVALID_HEADER` if a header value would carry CR/LF, `INVALID_DISPLAY_NAME` for a bad name.
    public func compose(_ input: Input) throws -> Composed {
        let link = linkBuilder.link(for: input.kind, code: input.code, settings: input.settings, lang: input.locale.value)
        let unsubscribe = unsubscribeLink(input)
        let variables = variables(input, link: link, unsubscribe: unsubscribe)
        let templates = templates.compiled(input.kind, locale: input.locale, names: variables.keys.sorted())
        let message = MailMessage(
            from: from, to: try Mailbox(name: input.displayName, address: input.recipient), replyTo: replyTo,
            subject: templates.subject.render(variables), text: "", html: "", messageID: input.messageID, date: input.date,
            extraHeaders: input.campaignID.map { _ in unsubscribeHeaders(link: unsubscribe) } ?? [])
        func body(_ compiled: CompiledTemplate, _ encoded: EncodedTemplate?) -> MailMessage.Body {
            guard let encoded, encoded.fits(variables) else { return MailMessage.Body(compiled.render(variables)) }
            return MailMessage.Body(encoding: .quotedPrintable) { encoded.render(variables, into: &$0) }
        }
        var bytes = try message.encoded(text: body(templates.text, templates.encodedText), html: body(templates.html, templates.encodedHTML))
        if let dkim { bytes = try dkim.sign(bytes, at: input.date) }
        let envelopeFrom = input.outboxID.flatMap { id in verp?.address(for: id) } ?? from.address.value
        return Composed(bytes: bytes, link: link, envelopeFrom: envelopeFrom, recipient: input.recipient.value)
    }

    /// The subject and bodies `compose` writes for `input` (previews).
    public func content(_ input: Input) -> RenderedContent {
        let link = linkBuilder.link(for: input.kind, code: input.code, settings: input.settings, lang: input.locale.value)
        return templates.render(input.kind, locale: input.locale, variables: variables(input, link: link, unsubscribe: unsubscribeLink(input)))
    }

    /// The template variables of one message: the caller's (campaign columns), overridden by the built-in ones.
    private func variables(_ input: Input, link: String, unsubscribe: String?) -> [String: String] {
        let lifetime = input.lifetime ?? lifetimes[input.kind] ?? 3600
        var variables: [String: String] = input.variables
        let hours = max(1, Int((lifetime / 3600).rounded()))
        variables.merge([
            "link": link,
            "email": input.email.value,
            "appName": appName,
            "expiresIn": Self.describe(lifetime),
            "expiresInHours": String(hours),
            "requestedAt": UTCDate.minutes(input.requestedAt),
        ]) { _, builtIn in builtIn }
        for name in ["hoursOne", "hoursFew", "hoursMany"] { variables[name] = nil }
        let language = templates.resolve(input.kind, input.locale).language
        variables.merge(PluralCategory.of(hours, language: language).variables("hours")) { _, builtIn in builtIn }
        if let newEmail = input.newEmail { variables["newEmail"] = newEmail.value }
        variables["typedCode"] = input.typedCode
        if let name = input.displayName, !name.isEmpty { variables["displayName"] = name }
        if let unsubscribe { variables["unsubscribeLink"] = unsubscribe }
        return variables
    }

    /// The visible unsubscribe link of campaign mail (signed once per message, for the body and the headers):
    /// Herald's confirm page with the row's signed token, else the mailto address; nil for transactional mail and
    /// when neither is configured.
    func unsubscribeLink(_ input: Input) -> String? {
        guard input.campaignID != nil else { return nil }
        if !campaigns.unsubscribeURL.isEmpty, let outboxID = input.outboxID, let unsubscribeTokens {
            let separator = campaigns.unsubscribeURL.contains("?") ? "&" : "?"
            return "\(campaigns.unsubscribeURL)\(separator)token=\(unsubscribeTokens.token(for: outboxID))"
        }
        return campaigns.unsubscribeMailto.isEmpty ? nil : "mailto:\(campaigns.unsubscribeMailto)?subject=unsubscribe"
    }

    /// RFC 2369 / RFC 8058 headers for campaign mail: the mailto target, and Herald's one-click https target (`link`
    /// from `unsubscribeLink`, when it is one); none when neither is configured.
    func unsubscribeHeaders(link: String?) -> [(name: String, value: String)] {
        var targets: [String] = []
        if !campaigns.unsubscribeMailto.isEmpty { targets.append("<mailto:\(campaigns.unsubscribeMailto)?subject=unsubscribe>") }
        var oneClick = false
        if let target = link, target.hasPrefix("http") {
            targets.append("<\(target)>")
            oneClick = true
        }
        guard !targets.isEmpty else { return [] }
        var headers = [(name: "List-Unsubscribe", value: targets.joined(separator: ", "))]
        if oneClick { headers.append((name: "List-Unsubscribe-Post", value: "List-Unsubscribe=One-Click")) }
        return headers
    }

    /// `1 hour`, `6 hours`, `3 days`, `15 minutes`.
    static func describe(_ seconds: TimeInterval) -> String {
        func plural(_ value: Int, _ unit: String) -> String { "\(value) \(unit)\(value == 1 ? "" : "s")" }
        if seconds >= 86400, seconds.truncatingRemainder(dividingBy: 86400) == 0 { return plural(Int(seconds / 86400), "day") }
        if seconds >= 3600 { return plural(Int((seconds / 3600).rounded()), "hour") }
        return plural(max(1, Int((seconds / 60).rounded())), "minute")
    }
}

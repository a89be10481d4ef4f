import Foundation

/// One save of an action's template in one locale, made in the console and kept in the ledger: the newest revision of
/// an (action, locale) overrides the files of `templates.directory`; one without parts (`isFile`) goes back to them.
public struct TemplateRevision: Sendable, Hashable {
    /// The ledger's id: later saves have larger ones (0 before it is saved).
    public var id: Int64
    public var kind: ActionKind
    public var locale: LocaleTag
    /// The three parts' Mustache source; nil for "back to the file".
    public var parts: TemplateParts?
    /// Who saved it: the console session's actor (`admin:1a2b3c4d`).
    public var author: String
    public var createdAt: Date

    public init(
        id: Int64 = 0, kind: ActionKind, locale: LocaleTag, parts: TemplateParts?, author: String,
        createdAt: Date
    ) {
        self.id = id
        self.kind = kind
        self.locale = locale
        self.parts = parts
        self.author = author
        self.createdAt = createdAt
    }

    /// Whether this revision goes back to the files of `templates.directory`.
    public var isFile: Bool { parts == nil }
}

/// The Mustache source of a template's three parts, as the files `subject.mustache`, `body.html.mustache` and
/// `body.txt.mustache` hold it.
public struct TemplateParts: Sendable, Hashable {
    public var subject: String
    public var html: String
    public var text: String

    public init(subject: String, html: String, text: String) {
        self.subject = subject
        self.html = html
        self.text = text
    }

    /// As template files of `locale`.
    public func files(_ locale: LocaleTag) -> [TemplateFile] {
        [
            TemplateFile(locale: locale, part: "subject", text: subject),
            TemplateFile(locale: locale, part: "body.html", text: html),
            TemplateFile(locale: locale, part: "body.txt", text: text),
        ]
    }
}

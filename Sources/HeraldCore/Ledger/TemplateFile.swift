/// One file of a campaign's own templates: the `subject`, `body.html` or `body.txt` of a locale, kept in the ledger so
/// that every worker renders the campaign's mail with them.
public struct TemplateFile: Sendable, Hashable {
    public static let parts = ["subject", "body.html", "body.txt"]

    public var locale: LocaleTag
    /// `subject`, `body.html` or `body.txt`.
    public var part: String
    public var text: String

    public init(locale: LocaleTag, part: String, text: String) {
        self.locale = locale
        self.part = part
        self.text = text
    }
}

import Foundation
import HeraldCore
import HeraldMail
import HeraldStore

/// Templates edited in the console: the source in force, drafts rendered without saving, saves that render first,
/// the history and reverts. The ledger keeps every save (`TemplateRevision`); the newest of an (action, locale)
/// overrides the files of `templates.directory` for the worker and the previews.
///
/// ```swift
/// let revision = try console.saveTemplate(.resetPassword, locale: en, parts: draft, author: "admin:1a2b3c4d")
/// ```
extension ConsoleService {
    /// How many revisions the history shows.
    public static let historyLimit = 50

    /// The composer the worker renders with now: the newest revisions over the files. Read on each call (console
    /// pages are few; the worker reads them at most once a minute, `TemplateOverrides`).
    func currentComposer() throws -> MessageComposer {
        try composer.overriding(try store.currentTemplateRevisions())
    }

    /// The source in force for `kind` in `locale`: the newest revision's, else the files', with that revision.
    public func templateSource(_ kind: ActionKind, locale: LocaleTag) throws -> (
        parts: TemplateParts, revision: TemplateRevision?
    ) {
        let newest = try store.templateRevisions(kind, locale: locale, limit: 1).first
        if let newest, let parts = newest.parts { return (parts, newest) }
        return (try fileParts(kind, locale: locale), newest)
    }

    /// The three files of `kind` in `locale` under `templates.directory`. - Throws: `NOT_FOUND` when one is missing.
    public func fileParts(_ kind: ActionKind, locale: LocaleTag) throws -> TemplateParts {
        let files = try TemplateFile.read(
            directory: "\(configuration.templatesDirectory)/\(kind.rawValue)"
        ).filter { $0.locale == locale }
        func part(_ name: String) throws -> String {
            guard let file = files.first(where: { $0.part == name }) else {
                throw HeraldError(
                    .notFound,
                    "no \(kind.rawValue)/\(locale.value)/\(name).mustache in \(configuration.templatesDirectory)"
                )
            }
            return file.text
        }
        return TemplateParts(
            subject: try part("subject"), html: try part("body.html"), text: try part("body.txt"))
    }

    /// `parts` rendered with the preview's sample data, as the worker would render them; nothing is saved.
    ///
    /// - Throws: `TEMPLATE_ERROR` with the renderer's message when a part does not parse, or when the subject renders
    ///   empty.
    public func previewDraft(_ kind: ActionKind, locale: LocaleTag, parts: TemplateParts) throws
        -> RenderedContent
    {
        let draft = TemplateRevision(
            kind: kind, locale: locale, parts: parts, author: "", createdAt: Date())
        let drafted = try currentComposer().overriding([draft])
        let content = drafted.content(
            try drafted.sampleInput(kind, locale: locale, links: configuration.links))
        guard !content.subject.isEmpty else {
            throw HeraldError(.templateError, "the subject renders empty")
        }
        return content
    }

    /// Saves `parts` as the newest revision of `kind` in `locale` once they render (`previewDraft`); nothing is
    /// saved when they do not.
    public func saveTemplate(
        _ kind: ActionKind, locale: LocaleTag, parts: TemplateParts, author: String
    ) throws -> TemplateRevision {
        _ = try previewDraft(kind, locale: locale, parts: parts)
        return try store.saveTemplateRevision(
            TemplateRevision(kind: kind, locale: locale, parts: parts, author: author, createdAt: Date()))
    }

    /// A new revision copying revision `id` of the same template, or with `id` nil one going back to the files.
    ///
    /// - Throws: `NOT_FOUND` for a revision of another template; `TEMPLATE_ERROR` when the copy no longer renders.
    public func revertTemplate(_ kind: ActionKind, locale: LocaleTag, to id: Int64?, author: String)
        throws -> TemplateRevision
    {
        var parts: TemplateParts?
        if let id {
            let old = try store.templateRevision(id: id)
            guard old.kind == kind, old.locale == locale else {
                throw HeraldError(
                    .notFound, "revision \(id) is not one of \(kind.rawValue)/\(locale.value)")
            }
            if let copied = old.parts { _ = try previewDraft(kind, locale: locale, parts: copied) }
            parts = old.parts
        }
        return try store.saveTemplateRevision(
            TemplateRevision(kind: kind, locale: locale, parts: parts, author: author, createdAt: Date()))
    }

    /// The revisions of `kind` in `locale`, newest first (`historyLimit`).
    public func templateHistory(_ kind: ActionKind, locale: LocaleTag) throws -> [TemplateRevision] {
        try store.templateRevisions(kind, locale: locale, limit: Self.historyLimit)
    }
}

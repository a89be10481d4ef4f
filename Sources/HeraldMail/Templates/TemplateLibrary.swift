import Foundation
import HeraldCore
import Mustache

/// The email templates on disk, parsed once, rendered per message.
///
/// Layout: `templates/layout.html.mustache` and
/// `templates/<action>/<locale>/{subject,body.html,body.txt}.mustache`.
/// A locale resolves `pl-PL → pl → default`.
///
/// ```swift
/// let library = try TemplateLibrary(directory: "templates", defaultLocale: try LocaleTag("en"))
/// let content = try library.render(.verifyEmail, locale: try LocaleTag("pl-PL"), variables: variables)
/// ```
public struct TemplateLibrary: Sendable {
    private let library: MustacheLibrary
    /// The locales available per action.
    private let locales: [ActionKind: Set<LocaleTag>]
    public let defaultLocale: LocaleTag
    /// The shared layout, which a campaign's own templates use too.
    private let layout: MustacheTemplate
    private let cache = TemplateCache()

    static let parts = ["subject", "body.html", "body.txt"]

    /// Loads and parses every template; fails if the default locale lacks any action's templates.
    public init(directory: String, defaultLocale: LocaleTag) throws {
        let fileManager = FileManager.default
        var library = MustacheLibrary()
        var locales: [ActionKind: Set<LocaleTag>] = [:]
        let layoutPath = "\(directory)/layout.html.mustache"
        guard let layout = fileManager.contents(atPath: layoutPath) else {
            throw HeraldError(.templateError, "missing \(layoutPath)")
        }
        let parsedLayout = try Self.parse(layout, path: layoutPath)
        library.register(parsedLayout, named: "layout")
        for kind in ActionKind.allCases {
            let actionDirectory = "\(directory)/\(kind.rawValue)"
            let entries = (try? fileManager.contentsOfDirectory(atPath: actionDirectory)) ?? []
            for entry in entries.sorted() {
                guard let locale = try? LocaleTag(entry) else { continue }
                for part in Self.parts {
                    let path = "\(actionDirectory)/\(entry)/\(part).mustache"
                    guard let data = fileManager.contents(atPath: path) else {
                        throw HeraldError(.templateError, "missing \(path)")
                    }
                    library.register(try Self.parse(data, path: path), named: Self.name(kind, locale, part))
                }
                locales[kind, default: []].insert(locale)
            }
            guard locales[kind, default: []].contains(defaultLocale) else {
                throw HeraldError(.templateError, "no \(kind.rawValue) templates for the default locale \(defaultLocale) in \(actionDirectory)")
            }
        }
        self.library = library
        self.locales = locales
        self.defaultLocale = defaultLocale
        self.layout = parsedLayout
    }

    private init(library: MustacheLibrary, locales: [ActionKind: Set<LocaleTag>], defaultLocale: LocaleTag, layout: MustacheTemplate) {
        self.library = library
        self.locales = locales
        self.defaultLocale = defaultLocale
        self.layout = layout
    }

    /// A campaign's own templates for `kind` (`files`), with this library's layout and default locale: a recipient's
    /// locale falls back to its language, then to the default locale, within the campaign's set.
    ///
    /// - Throws: `TEMPLATE_ERROR` naming a file that does not parse, a locale without its three parts, or a set
    ///   without the default locale.
    public func campaignLibrary(_ kind: ActionKind, files: [TemplateFile]) throws -> TemplateLibrary {
        var library = MustacheLibrary()
        library.register(layout, named: "layout")
        var parts: [LocaleTag: Set<String>] = [:]
        for file in files {
            guard TemplateFile.parts.contains(file.part) else {
                throw HeraldError(.templateError, "\(file.locale)/\(file.part): not a template part (subject, body.html, body.txt)")
            }
            library.register(
                try Self.parse(Data(file.text.utf8), path: "\(file.locale)/\(file.part).mustache"),
                named: Self.name(kind, file.locale, file.part))
            parts[file.locale, default: []].insert(file.part)
        }
        for (locale, present) in parts where present.count < TemplateFile.parts.count {
            let missing = TemplateFile.parts.filter { !present.contains($0) }.map { "\(locale)/\($0).mustache" }
            throw HeraldError(.templateError, "missing \(missing.joined(separator: ", "))")
        }
        guard parts[defaultLocale] != nil else {
            throw HeraldError(.templateError, "no templates for the default locale \(defaultLocale) (\(defaultLocale)/subject.mustache, …)")
        }
        return TemplateLibrary(library: library, locales: [kind: Set(parts.keys)], defaultLocale: defaultLocale, layout: layout)
    }
    /// This library with templates edited in the console in force: each revision's parts replace its action's
    /// templates in its locale (one that goes back to the file changes nothing); renderings compile afresh.
    ///
    /// - Throws: `TEMPLATE_ERROR` with the renderer's message for a part that does not parse.
    public func overriding(_ revisions: [TemplateRevision]) throws -> TemplateLibrary {
        var library = self.library
        var locales = self.locales
        for revision in revisions {
            guard let parts = revision.parts else { continue }
            for file in parts.files(revision.locale) {
                let path = "\(revision.kind.rawValue)/\(revision.locale.value)/\(file.part).mustache"
                library.register(try Self.parse(Data(file.text.utf8), path: path), named: Self.name(revision.kind, revision.locale, file.part))
            }
            locales[revision.kind, default: []].insert(revision.locale)
        }
        return TemplateLibrary(library: library, locales: locales, defaultLocale: defaultLocale, layout: layout)
    }

    /// The locales `kind` has templates for, in tag order.
    public func locales(of kind: ActionKind) -> [LocaleTag] {
        locales[kind, default: []].sorted { $0.value < $1.value }
    }

    /// The locale whose templates serve a request for `requested`.
    public func resolve(_ kind: ActionKind, _ requested: LocaleTag) -> LocaleTag {
        cache.resolved(kind: kind.rawValue, requested: requested.value) {
            let available = locales[kind, default: []]
            return requested.fallbackChain(to: defaultLocale).first(where: available.contains) ?? defaultLocale
        }
    }

    /// Renders subject, HTML and text bodies. `variables` holds strings only.
    ///
    /// Each (action, locale, set of variable names) is rendered through Mustache once and then
    /// reused as literal text with slots (see `CompiledTemplate`), so the send path only concatenates.
    public func render(_ kind: ActionKind, locale requested: LocaleTag, variables: [String: String]) -> RenderedContent {
        compiled(kind, locale: requested, names: variables.keys.sorted()).render(variables)
    }

    /// The compiled templates serving `kind` in `requested` for a set of variable names (sorted), compiled on first use.
    func compiled(_ kind: ActionKind, locale requested: LocaleTag, names: [String]) -> TemplateCache.Entry {
        let locale = resolve(kind, requested)
        return cache.entry(TemplateCache.Key(kind: kind.rawValue, locale: locale.value, names: names)) {
            let markers = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, CompiledTemplate.marker($0)) })
            let content = renderThroughMustache(kind, locale: locale, variables: markers)
            return TemplateCache.Entry(
                locale: locale, subject: CompiledTemplate(rendered: content.subject, names: names),
                html: CompiledTemplate(rendered: content.html, names: names), text: CompiledTemplate(rendered: content.text, names: names))
        }
    }

    /// Renders with Mustache directly; the subject is trimmed to one line and fed to the layout.
    func renderThroughMustache(_ kind: ActionKind, locale: LocaleTag, variables: [String: String]) -> RenderedContent {
        var context: [String: Any] = variables
        context["locale"] = locale.value
        context["direction"] = locale.isRightToLeft ? "rtl" : "ltr"
        let rawSubject = library.render(context, withTemplate: Self.name(kind, locale, "subject")) ?? ""
        let subject = rawSubject.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " ")
        context["subject"] = subject
        let html = library.render(context, withTemplate: Self.name(kind, locale, "body.html")) ?? ""
        let text = library.render(context, withTemplate: Self.name(kind, locale, "body.txt")) ?? ""
        return RenderedContent(locale: locale, subject: subject, html: html, text: Self.trimLeadingBlankLines(text))
    }

    private static func name(_ kind: ActionKind, _ locale: LocaleTag, _ part: String) -> String {
        "\(kind.rawValue)/\(locale.value)/\(part)"
    }

    private static func parse(_ data: Data, path: String) throws -> MustacheTemplate {
        guard let text = String(data: data, encoding: .utf8) else {
            throw HeraldError(.templateError, "\(path) is not valid UTF-8")
        }
        do {
            return try MustacheTemplate(string: text)
        } catch {
            throw HeraldError(.templateError, "\(path): \(error)")
        }
    }

    /// The TEXT pragma line leaves a leading newline behind; drop it.
    private static func trimLeadingBlankLines(_ text: String) -> String {
        String(text.drop(while: \.isNewline))
    }
}

/// One message's rendered parts.
public struct RenderedContent: Sendable, Hashable {
    /// The locale whose templates were used after fallback.
    public let locale: LocaleTag
    public let subject: String
    public let html: String
    public let text: String
}

import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Mustache

/// Renders the action pages (`templates/pages/page.html.mustache`) in the link's language.
struct PageRenderer: Sendable {
    private let template: MustacheTemplate
    /// Localized strings per locale, from `templates/pages/strings/<locale>.json`.
    private let strings: [LocaleTag: [String: String]]
    let defaultLocale: LocaleTag
    let appName: String

    /// The page kinds the template knows.
    enum Kind: Sendable { case verifyConfirm, recoverConfirm, resetForm, codeForm, success, error, unsubscribeConfirm, unsubscribed }

    init(directory: String, defaultLocale: LocaleTag, appName: String) throws {
        template = try Self.template(at: "\(directory)/pages/page.html.mustache")
        var strings: [LocaleTag: [String: String]] = [:]
        let stringsDirectory = "\(directory)/pages/strings"
        for file in (try? FileManager.default.contentsOfDirectory(atPath: stringsDirectory)) ?? [] where file.hasSuffix(".json") {
            guard let locale = try? LocaleTag(String(file.dropLast(5))),
                let data = FileManager.default.contents(atPath: "\(stringsDirectory)/\(file)"),
                let table = try? JSONDecoder().decode([String: String].self, from: data)
            else { throw HeraldError(.templateError, "\(stringsDirectory)/\(file) is not a JSON object of strings") }
            strings[locale] = table
        }
        guard strings[defaultLocale] != nil else {
            throw HeraldError(.templateError, "no page strings for the default locale in \(stringsDirectory)/\(defaultLocale).json")
        }
        self.strings = strings
        self.defaultLocale = defaultLocale
        self.appName = appName
    }

    /// A page template file, parsed. - Throws: `TEMPLATE_ERROR` naming the file.
    static func template(at path: String) throws -> MustacheTemplate {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw HeraldError(.templateError, "missing \(path)")
        }
        do {
            return try MustacheTemplate(string: text)
        } catch {
            throw HeraldError(.templateError, "\(path): \(error)")
        }
    }

    /// The locale whose strings serve `requested` (`pl-PL → pl → default`).
    func resolve(_ requested: String?) -> LocaleTag {
        let tag = requested.flatMap { try? LocaleTag($0) } ?? defaultLocale
        return tag.fallbackChain(to: defaultLocale).first { strings[$0] != nil } ?? defaultLocale
    }

    /// Renders one page; `message` is a key of the strings table, shown in the page's language.
    func render(_ kind: Kind, lang requested: String?, message: String? = nil, form: PageForm? = nil) -> String {
        let lang = resolve(requested)
        let table = strings[lang] ?? [:]
        let text = message.map { table[$0] ?? strings[defaultLocale]?[$0] ?? $0 }
        let model = PageModel(
            kind: kind, lang: lang, appName: appName, strings: table, message: text, form: form)
        return template.render(model)
    }
}

extension PageRenderer {
    /// One page as a response, with the pages' headers (no caching, no framing, a strict CSP).
    func page(
        _ kind: Kind, _ lang: String?, _ message: String? = nil, _ status: HTTPResponse.Status = .ok, form: PageForm? = nil
    ) -> Response {
        Self.response(html: render(kind, lang: lang, message: message, form: form), status: status, continuingTo: form?.continueUrl)
    }

    /// An HTML page as a response, with the pages' headers. `continuingTo`: the (authorized) continue URL the page's
    /// form redirects to once it is done, whose origin `form-action` must then allow — browsers apply it to the
    /// redirect after the submission too, and a page that may not redirect leaves the user on the form.
    static func response(html: String, status: HTTPResponse.Status = .ok, continuingTo continueURL: String? = nil) -> Response {
        var headers = headers
        if let origin = continueURL.flatMap({ Self.origin(of: $0) }) {
            headers[.contentSecurityPolicy] = policy(formAction: "'self' \(origin)")
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// No caching, no framing, no referrer, and a CSP that allows only the page's own inline style and forms.
    static let headers: HTTPFields = [
        .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .contentSecurityPolicy: policy(formAction: "'self'"),
        .init("Referrer-Policy")!: "no-referrer", .init("X-Frame-Options")!: "DENY",
    ]

    static func policy(formAction: String) -> String {
        "default-src 'none'; style-src 'unsafe-inline'; form-action \(formAction); base-uri 'none'; frame-ancestors 'none'"
    }

    /// `scheme://host[:port]` of an http(s) URL, built from its parsed parts (nothing else of it reaches the header).
    static func origin(of url: String) -> String? {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = parts.host, !host.isEmpty,
            host.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "-.:[]".unicodeScalars.contains($0) })
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed)" + (parts.port.map { ":\($0)" } ?? "")
    }
}

/// The hidden fields of a page's form, and what the page shows about the link.
struct PageForm: Sendable {
    let mode: String
    let oobCode: String
    let apiKey: String
    let csrfToken: String
    let continueUrl: String?
    var email: String?
    var newEmail: String?
    /// The one-click unsubscribe token the confirm page posts back.
    var token: String?
    /// The typed-code page: codes are letters (else digits).
    var letters = false
}

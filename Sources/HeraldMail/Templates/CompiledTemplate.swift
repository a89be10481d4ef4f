import HeraldCore
import Synchronization

/// A rendered template with its variables left as slots, so repeat renders are concatenation.
///
/// Mustache output depends on variable *values* only through interpolation and on their
/// *presence* through sections. Rendering once with unique marker values per variable set
/// therefore yields literal text plus slots; a marker that came out HTML-escaped marks a slot
/// that must be escaped the same way.
struct CompiledTemplate: Sendable {
    enum Segment: Sendable {
        case literal(String)
        case variable(name: String, htmlEscaped: Bool)
    }

    let segments: [Segment]

    /// A marker for variable `index` that Mustache's HTML escaping visibly changes ("&" → "&amp;").
    static func marker(_ index: Int) -> String { "\u{E000}\(index)&\u{E001}" }

    /// Splits text rendered with `marker(i)` for `names[i]` into literals and slots.
    init(rendered: String, names: [String]) {
        var segments: [Segment] = []
        var literal = ""
        var rest = Substring(rendered)
        while let open = rest.firstIndex(of: "\u{E000}") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "\u{E001}") else { break }
            let body = rest[rest.index(after: open)..<close]
            let digits = body.prefix { $0.isNumber }
            let suffix = body.dropFirst(digits.count)
            if let index = Int(digits), index < names.count, suffix == "&" || suffix == "&amp;" {
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                segments.append(.variable(name: names[index], htmlEscaped: suffix == "&amp;"))
            } else {
                literal += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { segments.append(.literal(literal)) }
        self.segments = segments
    }

    func render(_ variables: [String: String]) -> String {
        var output = ""
        output.reserveCapacity(4096)
        for segment in segments {
            switch segment {
            case .literal(let text):
                output += text
            case .variable(let name, let escaped):
                let value = variables[name] ?? ""
                output += escaped ? Self.escapeHTML(value) : value
            }
        }
        return output
    }

    /// The same escaping swift-mustache applies to `{{name}}` in HTML templates (`&`, `<`, `>`, `"`, `'`).
    static func escapeHTML(_ text: String) -> String {
        var contiguous = text
        let escaped: [UInt8]? = contiguous.withUTF8 { bytes in
            guard bytes.contains(where: isHTMLSpecial) else { return nil }
            var output: [UInt8] = []
            escapeHTML(bytes, into: &output)
            return output
        }
        return escaped.map { String(decoding: $0, as: UTF8.self) } ?? text
    }

    /// The bytes `escapeHTML` changes: `&`, `<`, `>`, `"` and `'`.
    static func isHTMLSpecial(_ byte: UInt8) -> Bool { byte == 38 || byte == 60 || byte == 62 || byte == 34 || byte == 39 }

    /// Appends `bytes` HTML-escaped, copying the runs between special bytes whole.
    static func escapeHTML(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        output.reserveCapacity(output.count + bytes.count + 32)
        var start = 0
        for index in bytes.indices where isHTMLSpecial(bytes[index]) {
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            switch bytes[index] {
            case 60: output.append(contentsOf: "&lt;".utf8)
            case 62: output.append(contentsOf: "&gt;".utf8)
            case 38: output.append(contentsOf: "&amp;".utf8)
            case 34: output.append(contentsOf: "&quot;".utf8)
            default: output.append(contentsOf: "&#39;".utf8)
            }
            start = index + 1
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
    }
}

/// Compiled templates by action, locale and the set of variables present.
final class TemplateCache: Sendable {
    struct Key: Hashable, Sendable {
        let kind: String
        let locale: String
        let names: [String]
    }

    struct Entry: Sendable {
        let locale: LocaleTag
        let subject: CompiledTemplate
        let html: CompiledTemplate
        let text: CompiledTemplate
        /// The bodies with their literal text pre-encoded; nil for a body sent as base64.
        let encodedHTML: EncodedTemplate?
        let encodedText: EncodedTemplate?

        init(locale: LocaleTag, subject: CompiledTemplate, html: CompiledTemplate, text: CompiledTemplate) {
            self.locale = locale
            self.subject = subject
            self.html = html
            self.text = text
            encodedHTML = EncodedTemplate(html)
            encodedText = EncodedTemplate(text)
        }

        func render(_ variables: [String: String]) -> RenderedContent {
            RenderedContent(locale: locale, subject: subject.render(variables), html: html.render(variables), text: text.render(variables))
        }
    }

    private let entries = Mutex<[Key: Entry]>([:])
    /// The locale serving each (action, requested locale); bounded, since requested locales come from callers.
    private let resolutions = Mutex<[Resolution: LocaleTag]>([:])

    struct Resolution: Hashable, Sendable {
        let kind: String
        let requested: String
    }

    func resolved(kind: String, requested: String, resolve: () -> LocaleTag) -> LocaleTag {
        let key = Resolution(kind: kind, requested: requested)
        if let locale = resolutions.withLock({ $0[key] }) { return locale }
        let locale = resolve()
        resolutions.withLock { if $0.count < 4096 { $0[key] = locale } }
        return locale
    }

    func entry(_ key: Key, compile: () -> Entry) -> Entry {
        if let entry = entries.withLock({ $0[key] }) { return entry }
        let entry = compile()
        entries.withLock { $0[key] = entry }
        return entry
    }
}

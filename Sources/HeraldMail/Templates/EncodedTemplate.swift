/// A compiled body with its literal text already quoted-printable encoded, so a message's body is its
/// pre-encoded parts with only the variables encoded per message.
///
/// Quoted-printable's line breaks depend on the column, which depends on the variables before it. So each
/// part is encoded as if it started a line and, unless it ended one, is followed by a soft line break
/// (`=` CRLF, which decodes to nothing): the decoded body is exactly the rendered template's text.
struct EncodedTemplate: Sendable {
    enum Part: Sendable {
        case encoded([UInt8])
        case variable(name: String, htmlEscaped: Bool)
    }

    let parts: [Part]
    /// The literal text's length and non-ASCII bytes, for the encoding choice (`fits`).
    private let literalBytes: Int
    private let literalNonASCII: Int

    /// Nil when the template's text is mostly not ASCII: such bodies are sent as base64, encoded whole.
    init?(_ template: CompiledTemplate) {
        var literalText = ""
        for case .literal(let text) in template.segments { literalText += text }
        guard BodyEncoding.choose(for: literalText) == .quotedPrintable else { return nil }
        literalBytes = literalText.utf8.count
        literalNonASCII = literalText.utf8.count(where: { $0 >= 0x80 })
        var parts: [Part] = []
        for (index, segment) in template.segments.enumerated() {
            switch segment {
            case .literal(var text):
                var encoded: [UInt8] = []
                let column = text.withUTF8 { BodyEncoding.quotedPrintable($0, into: &encoded) }
                if column != 0 && index + 1 < template.segments.count { encoded += BodyEncoding.softBreak }
                parts.append(.encoded(encoded))
            case .variable(let name, let htmlEscaped):
                parts.append(.variable(name: name, htmlEscaped: htmlEscaped))
            }
        }
        self.parts = parts
    }

    /// Whether these variables keep the body what `render` writes: quoted-printable (`BodyEncoding.choose` of the
    /// whole rendered text), and no CR in a value (encoded apart from the text after it, a CR before a literal LF
    /// would become two line breaks). Otherwise the body is rendered and encoded whole.
    func fits(_ variables: [String: String]) -> Bool {
        var bytes = literalBytes
        var nonASCII = literalNonASCII
        for case .variable(let name, let htmlEscaped) in parts {
            guard let value = variables[name] else { continue }
            for byte in value.utf8 {
                if byte == 13 { return false }
                bytes += 1
                if byte >= 0x80 { nonASCII += 1 }
                // HTML escaping adds ASCII: `&amp;` `&lt;` `&gt;` `&quot;` `&#39;`.
                if htmlEscaped, CompiledTemplate.isHTMLSpecial(byte) { bytes += byte == 34 ? 5 : byte == 38 || byte == 39 ? 4 : 3 }
            }
        }
        return nonASCII * 5 <= bytes
    }

    /// Appends the body, quoted-printable encoded, ending with CRLF as `BodyEncoding.quotedPrintable` does.
    func render(_ variables: [String: String], into out: inout [UInt8]) {
        var escaped: [UInt8] = []
        for (index, part) in parts.enumerated() {
            switch part {
            case .encoded(let bytes):
                out += bytes
            case .variable(let name, let htmlEscaped):
                var value = variables[name] ?? ""
                let column = value.withUTF8 { raw in
                    guard htmlEscaped, raw.contains(where: CompiledTemplate.isHTMLSpecial) else {
                        return BodyEncoding.quotedPrintable(raw, into: &out)
                    }
                    escaped.removeAll(keepingCapacity: true)
                    CompiledTemplate.escapeHTML(raw, into: &escaped)
                    return escaped.withUnsafeBufferPointer { BodyEncoding.quotedPrintable($0, into: &out) }
                }
                if column != 0 && index + 1 < parts.count { out += BodyEncoding.softBreak }
            }
        }
        out += BodyEncoding.crlf
    }
}

/// One entity of a received message as a lenient reader sees it: its header fields, its body, and the entities
/// inside it (a multipart's parts, or the message a `message/rfc822` part carries).
///
/// Takes CRLF or bare LF, folded fields, quoted or bare boundaries, missing closing boundaries and garbage.
/// The work is bounded: only the first `maximumSize` bytes are read, nesting stops at `maximumDepth`, and a
/// message yields at most `maximumParts` entities.
///
/// ```swift
/// let root = MIMEPart(message: bytes)
/// let report = root.firstPart { $0.contentType.mediaType == "message/delivery-status" }
/// ```
struct MIMEPart {
    static let maximumSize = 4 << 20
    static let maximumDepth = 12
    static let maximumParts = 500

    /// The header section as it appears in the message.
    let header: ArraySlice<UInt8>
    let fields: [HeaderFields.Field]
    /// The body, still in its transfer encoding.
    let body: ArraySlice<UInt8>
    let contentType: ContentType
    /// A multipart's text before its first boundary.
    private(set) var preamble: ArraySlice<UInt8> = []
    /// A multipart's parts, in order; empty for anything else (and for a multipart without its boundary).
    private(set) var parts: [MIMEPart] = []
    /// Empty, or the one entity a `message/rfc822`, `message/global` or `…rfc822-headers` part carries.
    private var carried: [MIMEPart] = []

    /// The types whose body is a message (or a message's header section) to parse as an entity.
    static let messageTypes: Set<String> = [
        "message/rfc822", "message/global", "text/rfc822-headers", "message/rfc822-headers", "message/global-headers",
    ]

    /// The message in `message`'s first `maximumSize` bytes.
    init(message: [UInt8]) {
        var budget = Self.maximumParts
        self.init(message.prefix(Self.maximumSize), depth: 0, budget: &budget)
    }

    private init(_ bytes: ArraySlice<UInt8>, depth: Int, budget: inout Int) {
        budget -= 1
        let (fields, bodyStart) = HeaderFields.parse(bytes)
        header = bytes[bytes.startIndex..<bodyStart]
        body = bytes[bodyStart...]
        self.fields = fields
        contentType = ContentType(fields[field: "content-type"])
        guard depth < Self.maximumDepth, budget > 0 else { return }
        if contentType.mediaType.hasPrefix("multipart/"), let boundary = contentType.parameters["boundary"], !boundary.isEmpty {
            guard let (preamble, ranges) = Self.split(body, boundary: Array(boundary.utf8)) else { return }
            self.preamble = preamble
            for range in ranges where budget > 0 {
                parts.append(MIMEPart(body[range], depth: depth + 1, budget: &budget))
            }
        } else if Self.messageTypes.contains(contentType.mediaType) {
            let decoded = decodedBody
            carried = [MIMEPart(decoded[...], depth: depth + 1, budget: &budget)]
        }
    }

    /// The message a `message/rfc822` (or similar) part carries.
    var embedded: MIMEPart? { carried.first }

    /// The first value of the field `name` (in lower case), unfolded and trimmed.
    func field(_ name: String) -> String? {
        fields[field: name]
    }

    /// `base64` or `quoted-printable`; nil for any other `Content-Transfer-Encoding` (the body is as it is).
    var transferEncoding: String? {
        let encoding = field("content-transfer-encoding")?.lowercased().split(whereSeparator: \.isWhitespace).first
        return encoding == "base64" || encoding == "quoted-printable" ? encoding.map(String.init) : nil
    }

    /// The body with its `Content-Transfer-Encoding` undone.
    var decodedBody: [UInt8] {
        MIMEDecoding.body(body, encoding: transferEncoding)
    }

    /// This entity or the first entity among its parts (depth first, not inside carried messages) that `matches`.
    func firstPart(where matches: (MIMEPart) -> Bool) -> MIMEPart? {
        if matches(self) { return self }
        for part in parts {
            if let found = part.firstPart(where: matches) { return found }
        }
        return nil
    }

    /// Calls `visit` with every stretch of the message in document order: each entity's header section, a
    /// multipart's preamble, then its parts; a carried message; or a leaf's decoded body.
    func forEachSection(_ visit: (ArraySlice<UInt8>) -> Void) {
        visit(header)
        if let embedded {
            embedded.forEachSection(visit)
        } else if !parts.isEmpty {
            visit(preamble)
            for part in parts { part.forEachSection(visit) }
        } else {
            visit(decodedBody[...])
        }
    }

    /// The preamble and the ranges of `body`'s parts between lines `--boundary` (trailing blanks allowed), up
    /// to `--boundary--` or the end; the line break before a delimiter belongs to it. Nil without a delimiter.
    private static func split(_ body: ArraySlice<UInt8>, boundary: [UInt8]) -> (ArraySlice<UInt8>, [Range<Int>])? {
        let delimiter = Array("--".utf8) + boundary
        var ranges: [Range<Int>] = []
        var preambleEnd: Int?
        var partStart: Int?
        var lineStart = body.startIndex
        while lineStart < body.endIndex {
            let lineEnd = body[lineStart...].firstIndex(of: 10) ?? body.endIndex
            let next = lineEnd < body.endIndex ? lineEnd + 1 : lineEnd
            if let isClosing = delimiterLine(body[lineStart..<lineEnd], delimiter: delimiter) {
                var end = lineStart
                if end > body.startIndex, body[end - 1] == 10 { end -= 1 }
                if end > body.startIndex, body[end - 1] == 13 { end -= 1 }
                if let start = partStart {
                    ranges.append(start..<max(start, end))
                } else if preambleEnd == nil {
                    preambleEnd = end
                }
                if isClosing || ranges.count == maximumParts { return (body[body.startIndex..<(preambleEnd ?? end)], ranges) }
                partStart = next
            }
            lineStart = next
        }
        guard let preambleEnd, let partStart else { return nil }
        if partStart < body.endIndex { ranges.append(partStart..<body.endIndex) }
        return (body[body.startIndex..<preambleEnd], ranges)
    }

    /// Nil when `line` is not a delimiter; else whether it is the closing one.
    private static func delimiterLine(_ line: ArraySlice<UInt8>, delimiter: [UInt8]) -> Bool? {
        guard line.starts(with: delimiter) else { return nil }
        var rest = line.dropFirst(delimiter.count)
        let isClosing = rest.starts(with: [45, 45])
        if isClosing { rest = rest.dropFirst(2) }
        return rest.allSatisfy { $0 == 32 || $0 == 9 || $0 == 13 } ? isClosing : nil
    }
}

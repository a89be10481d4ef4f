import Foundation

/// RFC 5322-style fields as they appear in a header section and in the field groups of a delivery-status or
/// feedback-report part: read leniently, with CRLF or LF, folding, and names in any case.
enum HeaderFields {
    /// Bytes kept of a field's value (the rest is dropped), and groups read of a report part.
    static let maximumValue = 16 << 10
    static let maximumGroups = 1000

    /// One field, its name in lower case and its value unfolded (line breaks removed), trimmed, and cut to
    /// `maximumValue` bytes.
    struct Field: Equatable {
        var name: String
        var value: String
    }

    /// The fields at the start of `bytes` and where what follows them starts: after the first empty (or blank)
    /// line, or at the first line that is neither a field nor a continuation, or at the end. A leading mbox
    /// `From ` line is skipped.
    static func parse(_ bytes: ArraySlice<UInt8>) -> (fields: [Field], end: Int) {
        var fields: [Field] = []
        var name = ""
        var value: [UInt8] = []
        func finish() {
            guard !name.isEmpty else { return }
            let text = MIMEDecoding.text(value, charset: nil).trimmingCharacters(in: .whitespacesAndNewlines)
            fields.append(Field(name: name, value: text))
            name = ""
        }
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            let lineEnd = bytes[lineStart...].firstIndex(of: 10) ?? bytes.endIndex
            let next = lineEnd < bytes.endIndex ? lineEnd + 1 : lineEnd
            var contentEnd = lineEnd
            if contentEnd > lineStart, bytes[contentEnd - 1] == 13 { contentEnd -= 1 }
            let line = bytes[lineStart..<contentEnd]
            if line.allSatisfy({ $0 == 32 || $0 == 9 }) {
                finish()
                return (fields, next)
            }
            if line.first == 32 || line.first == 9, !name.isEmpty {
                value.append(contentsOf: line.prefix(max(0, maximumValue - value.count)))
            } else if lineStart == bytes.startIndex, line.starts(with: Array("From ".utf8)) {
                // an mbox separator
            } else if let colon = line.firstIndex(of: 58), let fieldName = Self.name(line[lineStart..<colon]) {
                finish()
                name = fieldName
                value = Array(line[(colon + 1)...].prefix(maximumValue))
            } else {
                finish()
                return (fields, lineStart)
            }
            lineStart = next
        }
        finish()
        return (fields, bytes.endIndex)
    }

    /// The first `maximumGroups` groups of fields in `bytes`, separated by empty lines (RFC 3464 §2.1, RFC 5965
    /// §3.1); a line that is not a field is skipped.
    static func groups(_ bytes: ArraySlice<UInt8>) -> [[Field]] {
        var groups: [[Field]] = []
        var rest = bytes
        while !rest.isEmpty, groups.count < maximumGroups {
            let (fields, end) = parse(rest)
            if !fields.isEmpty { groups.append(fields) }
            if end > rest.startIndex {
                rest = rest[end...]
            } else {
                let lineEnd = rest.firstIndex(of: 10) ?? rest.endIndex
                rest = rest[min(lineEnd + 1, rest.endIndex)...]
            }
        }
        return groups
    }

    /// The lower-cased field name `bytes` spell, allowing blanks before the colon; nil when they are no name.
    private static func name(_ bytes: ArraySlice<UInt8>) -> String? {
        var end = bytes.endIndex
        while end > bytes.startIndex, bytes[end - 1] == 32 || bytes[end - 1] == 9 { end -= 1 }
        let name = bytes[bytes.startIndex..<end]
        guard !name.isEmpty, name.count < 100, name.allSatisfy({ $0 > 32 && $0 < 127 && $0 != 58 }) else { return nil }
        return String(decoding: name, as: UTF8.self).lowercased()
    }
}

extension [HeaderFields.Field] {
    /// The first value of the field `name` (in lower case).
    subscript(field name: String) -> String? {
        first { $0.name == name }?.value
    }
}

import Foundation
import HeraldCore

/// RFC 2047 encoded words and RFC 5322 header syntax.
enum HeaderEncoding {
    /// Rejects values that would end the header early (CR or LF) or carry other control characters.
    static func checkValue(_ value: String, header: String) throws {
        if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            throw HeraldError(.invalidHeader, "the \(header) header value contains CR, LF or another control character")
        }
    }

    /// An unstructured value (a subject): raw when plain ASCII, else `=?UTF-8?B?…?=` words folded across lines.
    static func unstructured(_ value: String, nameLength: Int) -> String {
        let isPlain = value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && !value.contains("=?")
        if isPlain && value.utf8.count + nameLength + 2 <= 78 { return value }
        if isPlain { return fold(value, firstLineUsed: nameLength + 2) }
        return encodedWords(value)
    }

    /// A display name: a quoted string when ASCII, else encoded words.
    static func phrase(_ value: String) -> String {
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) && !value.contains("=?") {
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return "\"\(escaped)\""
        }
        return encodedWords(value)
    }

    /// Base64 encoded words of at most 75 characters, never splitting a character, joined by CRLF SP.
    static func encodedWords(_ value: String) -> String {
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in value {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 39 {  // 39 bytes → 52 base64 chars + 12 of framing; fits after "Subject: "
                words.append(word(chunk))
                chunk = []
            }
            chunk.append(contentsOf: bytes)
        }
        if !chunk.isEmpty || words.isEmpty { words.append(word(chunk)) }
        return words.joined(separator: "\r\n ")
    }

    private static func word(_ bytes: [UInt8]) -> String {
        "=?UTF-8?B?\(Data(bytes).base64EncodedString())?="
    }

    /// Folds plain ASCII at spaces so lines stay under 78 characters where possible.
    private static func fold(_ value: String, firstLineUsed: Int) -> String {
        var lines: [String] = []
        var line = ""
        var limit = 78 - firstLineUsed
        for word in value.split(separator: " ", omittingEmptySubsequences: false) {
            if !line.isEmpty && line.utf8.count + 1 + word.utf8.count > limit {
                lines.append(line)
                line = String(word)
                limit = 77
            } else {
                line = line.isEmpty ? String(word) : line + " " + word
            }
        }
        lines.append(line)
        return lines.joined(separator: "\r\n ")
    }
}

import Foundation

/// Lenient decoders for what arrives in received mail: transfer encodings, charsets and RFC 2047 encoded words.
///
/// None of them fails: bytes they cannot make sense of are skipped (base64), kept (quoted-printable) or
/// replaced (charsets), since a bounce is read for its clues, not re-sent.
enum MIMEDecoding {
    /// The body of an entity with `Content-Transfer-Encoding: encoding` (base64, quoted-printable, or anything
    /// else as is).
    static func body(_ bytes: ArraySlice<UInt8>, encoding: String?) -> [UInt8] {
        switch encoding {
        case "base64": base64(bytes)
        case "quoted-printable": quotedPrintable(bytes)
        default: Array(bytes)
        }
    }

    /// RFC 2045 §6.8, ignoring every byte outside the alphabet (line breaks, padding, junk).
    static func base64(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            let value: UInt8
            switch byte {
            case 65...90: value = byte - 65
            case 97...122: value = byte - 71
            case 48...57: value = byte + 4
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            default: continue
            }
            accumulator = (accumulator << 6 | UInt32(value)) & 0xFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }

    /// RFC 2045 §6.7: `=XX` (either case) and soft line breaks (`=` and optional trailing blanks before CRLF or
    /// LF) decoded; any other `=` kept as it is.
    static func quotedPrintable(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            guard byte == UInt8(ascii: "=") else {
                out.append(byte)
                index += 1
                continue
            }
            if index + 2 < input.count, let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) {
                out.append(high << 4 | low)
                index += 3
                continue
            }
            var next = index + 1
            while next < input.count, input[next] == 32 || input[next] == 9 { next += 1 }
            if next == input.count {
                index = next
            } else if input[next] == 10 {
                index = next + 1
            } else if input[next] == 13 {
                index = next + 1 < input.count && input[next + 1] == 10 ? next + 2 : next + 1
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 48...57: digit - 48
        case 65...70: digit - 55
        case 97...102: digit - 87
        default: nil
        }
    }

    /// `bytes` as text in `charset`: UTF-8 when they are valid UTF-8 or the charset says so (invalid sequences
    /// replaced), UTF-16 when named, otherwise ISO 8859-1 (every byte one character; close enough for the
    /// ASCII clues a bounce is read for).
    static func text(_ bytes: some Collection<UInt8>, charset: String?) -> String {
        let charset = charset?.lowercased() ?? "utf-8"
        if charset.hasPrefix("utf-16") || charset == "unicode" {
            let encoding: String.Encoding =
                switch charset {
                case "utf-16le": .utf16LittleEndian
                case "utf-16be": .utf16BigEndian
                default: .utf16
                }
            if let text = String(data: Data(bytes), encoding: encoding) { return text }
        }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        if charset == "utf-8" || charset == "utf8" || charset == "us-ascii" {
            return String(decoding: bytes, as: UTF8.self)
        }
        return latin1(bytes)
    }

    /// Every byte as the Unicode scalar of the same value.
    static func latin1(_ bytes: some Collection<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }

    /// A header value with its RFC 2047 encoded words (`=?charset?B|Q?text?=`) decoded; the blanks between
    /// two adjacent words dropped, as §6.2 says.
    static func encodedWords(_ value: String) -> String {
        guard value.contains("=?") else { return value }
        var out = ""
        var rest = Substring(value)
        var afterWord = false
        while let start = rest.firstRange(of: "=?") {
            let before = rest[..<start.lowerBound]
            guard let (decoded, end) = encodedWord(rest[start.lowerBound...]) else {
                out += before + "=?"
                rest = rest[start.upperBound...]
                afterWord = false
                continue
            }
            if !(afterWord && before.allSatisfy { $0 == " " || $0 == "\t" }) { out += before }
            out += decoded
            rest = rest[end...]
            afterWord = true
        }
        return out + rest
    }

    /// The word at the start of `text` decoded, and where it ends; nil when it is not an encoded word.
    private static func encodedWord(_ word: Substring) -> (String, String.Index)? {
        let parts = word.dropFirst(2).split(separator: "?", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].count < 40, parts[3].hasPrefix("="),
            let kind = parts[1].first.map({ $0.lowercased() }), parts[1].count == 1
        else { return nil }
        let charset = parts[0].split(separator: "*").first.map(String.init)
        let payload = Array(parts[2].utf8)
        let bytes: [UInt8]
        switch kind {
        case "b": bytes = base64(payload)
        case "q": bytes = quotedPrintable(payload.map { $0 == UInt8(ascii: "_") ? 32 : $0 })
        default: return nil
        }
        return (text(bytes, charset: charset), parts[3].index(after: parts[3].startIndex))
    }
}

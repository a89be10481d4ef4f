import Foundation

/// Content-Transfer-Encodings for UTF-8 bodies; output uses CRLF and lines of at most 76 octets.
enum BodyEncoding: String {
    case quotedPrintable = "quoted-printable"
    case base64

    /// Quoted-printable for mostly-ASCII text, base64 when more than a fifth of the bytes are not ASCII.
    static func choose(for text: String) -> BodyEncoding {
        var text = text
        let nonASCII = text.withUTF8 { bytes in
            var count = 0
            for byte in bytes where byte >= 0x80 { count += 1 }
            return count
        }
        return nonASCII * 5 > text.utf8.count ? .base64 : .quotedPrintable
    }

    func encode(_ text: String, into out: inout [UInt8]) {
        switch self {
        case .quotedPrintable: Self.quotedPrintable(text, into: &out)
        case .base64: Self.base64(text, into: &out)
        }
    }

    private static let hex = Array("0123456789ABCDEF".utf8)
    static let crlf: [UInt8] = [13, 10]

    /// RFC 2045 §6.7; line breaks in the input become CRLF, a "." that would start a line is encoded.
    static func quotedPrintable(_ text: String, into out: inout [UInt8]) {
        var text = text
        _ = text.withUTF8 { quotedPrintable($0, into: &out) }
        out.append(contentsOf: crlf)
    }

    /// Quoted-printable of `bytes` as if they started a line, without a line break after them; returns the
    /// length of the last line written (0 after a line break).
    ///
    /// Written into a buffer sized past the worst case (3 bytes per byte, plus a soft break per 24 bytes), then appended.
    @discardableResult
    static func quotedPrintable(_ bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) -> Int {
        var lineLength = 0
        let encoded = [UInt8](unsafeUninitializedCapacity: bytes.count * 4 + 16) { buffer, written in
            var at = 0
            @inline(__always) func put(_ byte: UInt8) {
                buffer[at] = byte
                at += 1
            }
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 13 || byte == 10 {
                    if byte == 13, index + 1 < bytes.count, bytes[index + 1] == 10 { index += 1 }
                    put(13)
                    put(10)
                    lineLength = 0
                    index += 1
                    continue
                }
                let literal: Bool
                switch byte {
                case UInt8(ascii: "="): literal = false
                case UInt8(ascii: "."): literal = lineLength != 0 && lineLength < 75
                case 32, 9: literal = !(index + 1 == bytes.count || bytes[index + 1] == 13 || bytes[index + 1] == 10)
                case 33...126: literal = true
                default: literal = false
                }
                let width = literal ? 1 : 3
                if lineLength + width > 75 {  // soft line break: "=" CRLF, keeping lines ≤ 76
                    put(UInt8(ascii: "="))
                    put(13)
                    put(10)
                    lineLength = 0
                }
                if literal && !(byte == UInt8(ascii: ".") && lineLength == 0) {
                    put(byte)
                    lineLength += 1
                } else {
                    put(UInt8(ascii: "="))
                    put(hex[Int(byte >> 4)])
                    put(hex[Int(byte & 0x0F)])
                    lineLength += 3
                }
                index += 1
            }
            written = at
        }
        out.append(contentsOf: encoded)
        return lineLength
    }

    /// A quoted-printable soft line break: `=` CRLF, which decodes to nothing.
    static let softBreak: [UInt8] = [UInt8(ascii: "="), 13, 10]

    static func base64(_ text: String, into out: inout [UInt8]) {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        let encoded = Array(Data(normalized.utf8).base64EncodedString().utf8)
        var start = 0
        while start < encoded.count {
            let end = min(start + 76, encoded.count)
            out.append(contentsOf: encoded[start..<end])
            out.append(contentsOf: crlf)
            start = end
        }
    }
}

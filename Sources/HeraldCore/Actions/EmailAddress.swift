/// A validated, canonical (lower-cased) email address.
///
/// Accepts a dot-atom local part (RFC 5322 `atext`) and a hostname domain, the forms every SMTP
/// server takes without SMTPUTF8. Anything else, including CR or LF, is rejected.
///
/// ```swift
/// let address = try EmailAddress("Ada@Example.COM")   // "ada@example.com"
/// ```
public struct EmailAddress: Hashable, Sendable, CustomStringConvertible, Codable {
    public let value: String
    public var description: String { value }

    /// The part after the `@`.
    public var domain: Substring { value[value.index(after: value.lastIndex(of: "@")!)...] }

    public init(_ raw: String, code: HeraldError.Code = .invalidEmail) throws {
        guard Self.isValid(raw) else {
            throw HeraldError(code, "not a valid email address: \(Self.printable(raw))")
        }
        value = raw.lowercased()
    }

    /// An address the ledger stored after validating it: taken as it is, not checked again (the worker reads
    /// thousands a second).
    public init(stored value: String) {
        self.value = value
    }

    /// `atext` of RFC 5322 by byte: the characters a dot-atom local part may hold besides dots.
    private static let atext: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~".utf8 { table[Int(byte)] = true }
        return table
    }()

    static func isValid(_ raw: String) -> Bool {
        var raw = raw
        return raw.withUTF8 { bytes in
            guard bytes.count <= 254, let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return false }
            let local = UnsafeBufferPointer(rebasing: bytes[..<at])
            guard !local.isEmpty, local.count <= 64 else { return false }
            // dot-atom: atext runs separated by single dots, no leading or trailing dot
            var previousWasDot = true
            for byte in local {
                if byte == UInt8(ascii: ".") {
                    if previousWasDot { return false }
                    previousWasDot = true
                } else if atext[Int(byte)] {
                    previousWasDot = false
                } else {
                    return false
                }
            }
            return !previousWasDot && Hostname.isValid(UnsafeBufferPointer(rebasing: bytes[(at + 1)...]))
        }
    }

    /// Renders untrusted input for an error message: control characters become escapes.
    static func printable(_ raw: String) -> String {
        let clipped = raw.count > 80 ? String(raw.prefix(80)) + "…" : raw
        return "'" + clipped.unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }.joined() + "'"
    }
}

/// Hostname syntax (letters, digits, hyphens; dot-separated labels of 1–63 characters).
public enum Hostname {
    public static func isValid(_ host: String) -> Bool {
        var host = host
        return host.withUTF8 { isValid($0) }
    }

    /// ASCII letters, digits and hyphens in labels of 1–63 bytes, no label starting or ending with a hyphen.
    static func isValid(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !host.isEmpty, host.count <= 253 else { return false }
        var labelLength = 0
        var previous: UInt8 = UInt8(ascii: ".")
        for byte in host {
            switch byte {
            case UInt8(ascii: "."):
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return false }
                labelLength = 0
            case UInt8(ascii: "-"):
                guard labelLength > 0 else { return false }
                labelLength += 1
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                labelLength += 1
            default:
                return false
            }
            guard labelLength <= 63 else { return false }
            previous = byte
        }
        return labelLength > 0 && previous != UInt8(ascii: "-")
    }
}

extension EmailAddress {
    /// How the ledger names an address it counts but need not show (abuse counters, quota keys): the first
    /// 16 hex digits of its SHA-256.
    public static func ledgerKey(_ address: String) -> String {
        Hex.encode(ActionCode.hash(address).prefix(8))
    }
}

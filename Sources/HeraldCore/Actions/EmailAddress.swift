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

    /// The mailbox the per-recipient limits count under: lower-cased, with any `+tag` after the local part
    /// dropped, so `Victim+1@x` and `victim+2@x` share one cooldown and one daily cap.
    ///
    /// ```swift
    /// try EmailAddress("Victim+7@Example.com").throttleKey   // "victim@example.com"
    /// ```
    public var throttleKey: String {
        let at = value.lastIndex(of: "@")!
        let local = value[..<at]
        guard let plus = local.firstIndex(of: "+"), plus != local.startIndex else { return value }
        return String(local[..<plus]) + String(value[at...])
    }

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

    private static let atext: Set<UInt8> = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~".utf8))

    static func isValid(_ raw: String) -> Bool {
        let bytes = Array(raw.utf8)
        guard bytes.count <= 254, let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return false }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        guard !local.isEmpty, local.count <= 64 else { return false }
        // dot-atom: atext runs separated by single dots, no leading or trailing dot
        var previousWasDot = true
        for byte in local {
            if byte == UInt8(ascii: ".") {
                if previousWasDot { return false }
                previousWasDot = true
            } else if atext.contains(byte) {
                previousWasDot = false
            } else {
                return false
            }
        }
        if previousWasDot { return false }
        return Hostname.isValid(String(decoding: domain, as: UTF8.self))
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
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-" else { return false }
            guard
                label.utf8.allSatisfy({
                    $0 < 128 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber || $0 == UInt8(ascii: "-"))
                })
            else { return false }
        }
        return true
    }
}

extension EmailAddress {
    /// How the ledger names an address it counts but need not show (abuse counters, quota keys): the first
    /// 16 hex digits of its SHA-256.
    public static func ledgerKey(_ address: String) -> String {
        ActionCode.hash(address).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}

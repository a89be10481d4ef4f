import Crypto
import Foundation
import HeraldCore

/// VERP envelope senders: `<localPart>+<outboxID>-<mac>@<domain>`, mac = first 16 lowercase hex chars of
/// HMAC-SHA256(key, "herald-verp:<outboxID>").
///
/// A bounce goes back to the envelope sender, so the address names the outbox row it is about; the MAC keeps
/// anyone else from naming rows (and so suppressing recipients) with forged bounces.
///
/// ```swift
/// let verp = VERPAddress(localPart: "bounces", domain: "mail.example.com", key: key)
/// let sender = verp.address(for: 42)      // "bounces+42-<16 hex>@mail.example.com"
/// verp.outboxID(in: sender.uppercased())  // 42
/// ```
public struct VERPAddress: Sendable {
    public let localPart: String
    public let domain: String
    private let key: SymmetricKey
    private let lowerLocalPart: [UInt8]
    private let lowerDomain: [UInt8]

    public init(localPart: String, domain: String, key: SymmetricKey) {
        self.localPart = localPart
        self.domain = domain
        self.key = key
        lowerLocalPart = Array(localPart.lowercased().utf8)
        lowerDomain = Array(domain.lowercased().utf8)
    }

    public func address(for outboxID: Int64) -> String {
        "\(localPart)+\(outboxID)-\(mac(outboxID))@\(domain)"
    }

    /// The outbox id an address names when it is one of ours with a valid MAC: local part and domain compared
    /// case-insensitively (MTAs may change case), angle brackets and surrounding whitespace tolerated; nil otherwise.
    public func outboxID(in address: String) -> Int64? {
        var text = address.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("<"), text.hasSuffix(">") {
            text = text.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let bytes = Array(text.utf8)
        let plus = lowerLocalPart.count
        return bytes.withUnsafeBufferPointer { buffer in
            guard plus < buffer.count, buffer[plus] == UInt8(ascii: "+"), Self.equalIgnoringCase(buffer, at: 0, lowerLocalPart),
                let (id, end) = match(buffer, plus: plus), end == buffer.count
            else { return nil }
            return id
        }
    }

    /// Every outbox id named by a valid VERP address of ours anywhere in a message (headers, body, every MIME part,
    /// including base64 and quoted-printable encoded parts and embedded message/rfc822 or text/rfc822-headers parts),
    /// de-duplicated, in order of first appearance. Addresses with a bad MAC are ignored.
    public func outboxIDs(in message: [UInt8]) -> [Int64] {
        var found: [Int64] = []
        var seen: Set<Int64> = []
        func scan(_ section: ArraySlice<UInt8>) {
            section.withUnsafeBufferPointer { buffer in
                for id in ids(in: buffer) where seen.insert(id).inserted { found.append(id) }
            }
        }
        let root = MIMEPart(message: message)
        root.forEachSection(scan)
        // The raw bytes too, for whatever a broken structure hid from the parts, unless they were all just read.
        if !root.parts.isEmpty || root.embedded != nil || root.transferEncoding != nil {
            scan(message.prefix(MIMEPart.maximumSize))
        }
        return found
    }

    /// The ids of the addresses in `text`, in order: each `+` preceded by our local part (itself not preceded by
    /// another address character) and followed by the rest of an address of ours, not followed by more domain.
    private func ids(in text: UnsafeBufferPointer<UInt8>) -> [Int64] {
        var ids: [Int64] = []
        let length = lowerLocalPart.count
        var plus = length
        while plus < text.count {
            defer { plus += 1 }
            guard text[plus] == UInt8(ascii: "+"),
                length == 0 || Self.lowercased(text[plus - 1]) == lowerLocalPart[length - 1],
                Self.equalIgnoringCase(text, at: plus - length, lowerLocalPart),
                plus == length || !Self.isLocalPartByte(text[plus - length - 1]),
                let (id, end) = match(text, plus: plus)
            else { continue }
            let continuesDomain =
                end < text.count
                && (Self.isDomainByte(text[end])
                    || (text[end] == UInt8(ascii: ".") && end + 1 < text.count && Self.isDomainByte(text[end + 1])))
            if !continuesDomain { ids.append(id) }
        }
        return ids
    }

    /// After the `+` at `plus`: the id, `-`, a MAC that is the id's, `@` and our domain; the id and the index
    /// after the domain.
    private func match(_ text: UnsafeBufferPointer<UInt8>, plus: Int) -> (Int64, Int)? {
        var index = plus + 1
        let idStart = index
        if index < text.count, text[index] == UInt8(ascii: "-") { index += 1 }
        while index < text.count, index - idStart < 20, text[index] >= 48, text[index] <= 57 { index += 1 }
        let macStart = index + 1
        let at = macStart + 16
        let domainEnd = at + 1 + lowerDomain.count
        guard index > idStart, domainEnd <= text.count, text[index] == UInt8(ascii: "-"), text[at] == UInt8(ascii: "@"),
            Self.equalIgnoringCase(text, at: at + 1, lowerDomain),
            let id = Int64(String(decoding: text[idStart..<index], as: UTF8.self))
        else { return nil }
        let expected = Array(mac(id).utf8)
        var difference: UInt8 = 0
        for offset in 0..<16 { difference |= Self.lowercased(text[macStart + offset]) ^ expected[offset] }
        return difference == 0 ? (id, domainEnd) : nil
    }

    private func mac(_ outboxID: Int64) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array("herald-verp:\(outboxID)".utf8), using: key)
        return Hex.encode(code.prefix(8))
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte + 32 : byte
    }

    /// Whether `text` holds `lower` at `start`, ignoring ASCII case.
    private static func equalIgnoringCase(_ text: UnsafeBufferPointer<UInt8>, at start: Int, _ lower: [UInt8]) -> Bool {
        guard start >= 0, start + lower.count <= text.count else { return false }
        for offset in 0..<lower.count where lowercased(text[start + offset]) != lower[offset] { return false }
        return true
    }

    private static func isDomainByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122, UInt8(ascii: "-"): true
        default: false
        }
    }

    private static func isLocalPartByte(_ byte: UInt8) -> Bool {
        isDomainByte(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "+")
    }
}

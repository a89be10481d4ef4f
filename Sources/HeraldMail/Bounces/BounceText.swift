import Foundation

/// The pieces a bounce is read for in free text: enhanced status codes, SMTP reply codes, addresses, and what
/// they mean for the bounce's kind.
enum BounceText {
    /// The first RFC 3463 enhanced status code of class 4 or 5 in `text` (`5.1.1`, `4.2.2`), standing alone:
    /// not part of a longer dotted number such as an IP address or a version.
    static func enhancedStatus(in text: some StringProtocol) -> String? {
        let bytes = Array(text.utf8)
        var index = 0
        while index + 4 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == 52 || bytes[index] == 53, bytes[index + 1] == 46,
                index == 0 || !(isAlphanumeric(bytes[index - 1]) || bytes[index - 1] == 46)
            else { continue }
            var end = index + 2
            guard let subject = digits(bytes, &end), end < bytes.count, bytes[end] == 46 else { continue }
            end += 1
            guard let detail = digits(bytes, &end), !continuesNumber(bytes, at: end) else { continue }
            return "\(bytes[index] - 48).\(subject).\(detail)"
        }
        return nil
    }

    /// The first bare SMTP reply code in `text` that reports a failure (4xx or 5xx): three digits standing
    /// alone, as in `said: 550 …` or `550-5.1.1 …`.
    static func smtpCode(in text: some StringProtocol) -> Int? {
        let bytes = Array(text.utf8)
        let before = Set(" \t(<[:#\"'".utf8)
        var index = 0
        while index + 2 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == 52 || bytes[index] == 53, (48...55).contains(bytes[index + 1]), isDigit(bytes[index + 2]),
                index == 0 || before.contains(bytes[index - 1]), !continuesNumber(bytes, at: index + 3)
            else { continue }
            return Int(bytes[index] - 48) * 100 + Int(bytes[index + 1] - 48) * 10 + Int(bytes[index + 2] - 48)
        }
        return nil
    }

    /// Hard only when the address itself is dead: an addressing failure (5.1.x: no such mailbox, bad domain, bad
    /// syntax, moved) or a disabled mailbox (5.2.1). Every other failure is soft: a transient one (4.x.x), a full
    /// mailbox (5.2.2, or 5.2.0 with words of quota in `context`), and the permanent ones that say nothing about
    /// the address (5.7.x policy such as a blocklisted sending IP or DMARC, 5.3.x/5.4.x/5.5.x/5.6.x system,
    /// routing, protocol and content): suppressing on those would cut a whole provider's users off mail they
    /// ask for. Nil for a status that is no failure.
    static func kind(status: String, context: some StringProtocol) -> BounceReport.Kind? {
        if status.hasPrefix("4.") { return .soft }
        guard status.hasPrefix("5.") else { return nil }
        if status.hasPrefix("5.1.") || status == "5.2.1" { return .hard }
        if status == "5.0.0" && !mentionsQuota(context) && mentionsDeadAddress(context) { return .hard }
        return .soft
    }

    /// Without an enhanced status: 550, 551 and 553 name a bad or unknown mailbox when the text says so; 552
    /// (storage exceeded), 554 (transaction failed, often policy) and 4xx are soft.
    static func kind(smtpCode: Int, context: some StringProtocol = "") -> BounceReport.Kind {
        guard [550, 551, 553].contains(smtpCode) else { return .soft }
        return mentionsDeadAddress(context) || context.isEmpty ? .hard : .soft
    }

    /// Words of an address that does not exist (or no longer does).
    static func mentionsDeadAddress(_ text: some StringProtocol) -> Bool {
        let text = text.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")  // unfolded
        return [
            "user unknown", "unknown user", "no such user", "does not exist", "doesn't exist", "unknown recipient",
            "recipient unknown", "mailbox unavailable", "mailbox not found", "no mailbox", "invalid recipient",
            "address rejected", "no such recipient", "not found", "disabled", "inactive", "unrouteable", "unknown or illegal",
            "not a registered", "not registered", "no longer",
        ].contains { text.contains($0) }
    }

    static func mentionsQuota(_ text: some StringProtocol) -> Bool {
        let text = text.lowercased()
        return ["quota", "mailbox full", "mailbox is full", "storage", "mailbox size"].contains { text.contains($0) }
    }

    /// The addresses in `text`, lowercased, in order: `local@domain.tld` with an unquoted local part.
    static func addresses(in text: some StringProtocol) -> [String] {
        let bytes = Array(text.utf8)
        let localBytes = Set("!#$%&'*+/=?^_`{|}~.-".utf8)
        var found: [String] = []
        var index = 0
        while index < bytes.count, found.count < 100 {
            defer { index += 1 }
            guard bytes[index] == 64 else { continue }
            var start = index
            while start > 0, isAlphanumeric(bytes[start - 1]) || localBytes.contains(bytes[start - 1]) { start -= 1 }
            while start < index, bytes[start] == 46 { start += 1 }
            var end = index + 1
            while end < bytes.count, isAlphanumeric(bytes[end]) || bytes[end] == 46 || bytes[end] == 45 { end += 1 }
            while end > index + 1, bytes[end - 1] == 46 || bytes[end - 1] == 45 { end -= 1 }
            let domain = bytes[(index + 1)..<end]
            guard start < index, domain.contains(46), domain.first != 46 else { continue }
            found.append(String(decoding: bytes[start..<end], as: UTF8.self).lowercased())
            index = end - 1
        }
        return found
    }

    /// An address field of a report (`rfc822; user@example.com`, `<user@example.com>`) without its type and
    /// brackets; nil when nothing is left.
    static func recipient(inField value: String) -> String? {
        var text = Substring(value)
        if let semicolon = text.firstIndex(of: ";"), !text[..<semicolon].contains("@") {
            text = text[text.index(after: semicolon)...]
        }
        text = text.drop { $0 == " " || $0 == "\t" || $0 == "<" }
        while let last = text.last, last == " " || last == "\t" || last == ">" { text = text.dropLast() }
        return text.isEmpty ? nil : String(text)
    }

    /// A Diagnostic-Code value without its type (`smtp;`, `X-Postfix;`).
    static func withoutType(_ diagnosticCode: String) -> String {
        guard let semicolon = diagnosticCode.firstIndex(of: ";") else { return diagnosticCode }
        let type = diagnosticCode[..<semicolon].trimmingCharacters(in: .whitespaces)
        guard !type.isEmpty, type.utf8.allSatisfy({ isAlphanumeric($0) || $0 == 45 }) else { return diagnosticCode }
        return String(diagnosticCode[diagnosticCode.index(after: semicolon)...])
    }

    private static func digits(_ bytes: [UInt8], _ index: inout Int) -> Int? {
        let start = index
        var value = 0
        while index < bytes.count, index - start < 3, isDigit(bytes[index]) {
            value = value * 10 + Int(bytes[index] - 48)
            index += 1
        }
        return index > start && !(index < bytes.count && isDigit(bytes[index])) ? value : nil
    }

    /// Whether a digit, a letter, or a dot and a digit follow at `index`.
    private static func continuesNumber(_ bytes: [UInt8], at index: Int) -> Bool {
        guard index < bytes.count else { return false }
        if isAlphanumeric(bytes[index]) { return true }
        return bytes[index] == 46 && index + 1 < bytes.count && isDigit(bytes[index + 1])
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte | 0x20 >= 97 && byte | 0x20 <= 122)
    }
}

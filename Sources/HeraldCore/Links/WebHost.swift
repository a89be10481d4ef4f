import Foundation

// MARK: - Host parsing

/// The standard's host parser for special schemes, with Herald's refusals.
enum WebHost {
    /// `[IPv6]`, a dotted IPv4 address, or an ASCII domain; nil when the standard fails it or Herald refuses it.
    static func parse(_ input: ArraySlice<Unicode.Scalar>) -> String? {
        if input.first == "[" {
            guard input.count >= 2, input.last == "]", let address = IPv6.parse(input.dropFirst().dropLast()) else {
                return nil
            }
            return "[" + IPv6.serialize(address) + "]"
        }
        guard let domain = percentDecodedUTF8(input), let ascii = IDNA.toASCII(domain),
            !ascii.unicodeScalars.contains(where: isRefusedDomainCodePoint)
        else { return nil }
        if IPv4.endsInANumber(ascii) {
            return IPv4.parse(ascii).map(IPv4.serialize)
        }
        return ascii
    }

    /// Percent-decodes `%XX` to bytes and reads them as UTF-8; invalid UTF-8 (which the standard turns
    /// into U+FFFD and then fails) is nil.
    static func percentDecodedUTF8(_ input: ArraySlice<Unicode.Scalar>) -> String? {
        let bytes = Array(String(scalars: input).utf8)
        var decoded: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(validating: decoded, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The standard's forbidden domain code points, plus `*`, which Chromium percent-encodes in a host
    /// where the standard keeps it.
    static func isRefusedDomainCodePoint(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value <= 0x20 || scalar.value == 0x7F || "#%/:<>?@[\\]^|*".unicodeScalars.contains(scalar)
    }
}

// MARK: - IPv4

/// The standard's IPv4 parser: one to four decimal, octal (`0`) or hex (`0x`) numbers.
enum IPv4 {
    /// True when the last label (ignoring one trailing empty label) is a number, so the host must be IPv4.
    static func endsInANumber(_ domain: String) -> Bool {
        var parts = domain.split(separator: ".", omittingEmptySubsequences: false)
        if parts.last == "" {
            if parts.count == 1 { return false }
            parts.removeLast()
        }
        guard let last = parts.last, !last.isEmpty else { return false }
        return last.unicodeScalars.allSatisfy(\.isASCIIDigit) || number(last) != nil
    }

    /// The address as a 32-bit number, or nil when a part is not a number or it does not fit.
    static func parse(_ domain: String) -> UInt32? {
        var parts = domain.split(separator: ".", omittingEmptySubsequences: false)
        if parts.last == "", parts.count > 1 { parts.removeLast() }
        guard parts.count <= 4 else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let value = number(part) else { return nil }
            numbers.append(value)
        }
        guard let last = numbers.popLast(), numbers.allSatisfy({ $0 <= 255 }) else { return nil }
        guard last < UInt64(1) << (8 * (4 - numbers.count)) else { return nil }
        var address = last
        for (index, value) in numbers.enumerated() {
            address += value << (8 * (3 - index))
        }
        return UInt32(address)
    }

    /// The IPv4 number parser; values past 2³² saturate there, which every caller then refuses.
    static func number(_ part: Substring) -> UInt64? {
        if part.isEmpty { return nil }
        var digits = part
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            radix = 16
            digits = digits.dropFirst(2)
        } else if digits.count >= 2, digits.hasPrefix("0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for scalar in digits.unicodeScalars {
            guard let digit = UInt64(String(scalar), radix: 16), digit < radix else { return nil }
            value = min(value * radix + digit, UInt64(1) << 32)
        }
        return value
    }

    static func serialize(_ address: UInt32) -> String {
        [24, 16, 8, 0].map { String((address >> $0) & 0xFF) }.joined(separator: ".")
    }
}

// MARK: - IPv6

/// The standard's IPv6 parser and serializer (compression of the longest zero run, lower-case hex).
enum IPv6 {
    /// The IPv6 parser, step by step as the standard writes it: up to eight hex pieces, one `::`,
    /// and an optional dotted IPv4 tail; no zone identifiers, no percent-decoding.
    static func parse(_ input: ArraySlice<Unicode.Scalar>) -> [UInt16]? {
        let chars = Array(input)
        var address = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var pointer = 0
        func at(_ index: Int) -> Unicode.Scalar? { index < chars.count ? chars[index] : nil }

        if at(pointer) == ":" {
            guard at(pointer + 1) == ":" else { return nil }
            pointer += 2
            pieceIndex += 1
            compress = pieceIndex
        }
        while let char = at(pointer) {
            guard pieceIndex < 8 else { return nil }
            if char == ":" {
                guard compress == nil else { return nil }
                pointer += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value = 0
            var length = 0
            while length < 4, let digit = at(pointer), digit.isASCIIHexDigit {
                value = value * 16 + Int(String(digit), radix: 16)!
                pointer += 1
                length += 1
            }
            if at(pointer) == "." {
                guard length > 0, pieceIndex <= 6,
                    let ipv4 = embeddedIPv4(chars[(pointer - length)...])
                else { return nil }
                address[pieceIndex] = UInt16(ipv4 >> 16)
                address[pieceIndex + 1] = UInt16(ipv4 & 0xFFFF)
                pieceIndex += 2
                break
            } else if at(pointer) == ":" {
                pointer += 1
                guard at(pointer) != nil else { return nil }
            } else if at(pointer) != nil {
                return nil
            }
            address[pieceIndex] = UInt16(value)
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0, swaps > 0 {
                address.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return address
    }

    /// Four decimal numbers 0...255 without leading zeros, as the last 32 bits of an IPv6 address.
    static func embeddedIPv4(_ input: ArraySlice<Unicode.Scalar>) -> UInt32? {
        let parts = input.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var address: UInt32 = 0
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCIIDigit),
                part.count == 1 || part.first != "0",
                let value = UInt32(String(scalars: part)), value <= 255
            else { return nil }
            address = address << 8 | value
        }
        return address
    }

    static func serialize(_ address: [UInt16]) -> String {
        let compress = longestZeroRun(address)
        var out = ""
        var index = 0
        while index < 8 {
            if let compress, compress.lowerBound == index {
                out += index == 0 ? "::" : ":"
                index = compress.upperBound
                continue
            }
            out += String(address[index], radix: 16)
            if index != 7 { out += ":" }
            index += 1
        }
        return out
    }

    /// The first longest run of two or more zero pieces, which serializes as `::`.
    static func longestZeroRun(_ address: [UInt16]) -> Range<Int>? {
        var best: Range<Int>?
        var start: Int?
        for index in 0...8 {
            if index < 8, address[index] == 0 {
                start = start ?? index
            } else if let runStart = start {
                let run = runStart..<index
                if run.count >= 2, run.count > (best?.count ?? 0) { best = run }
                start = nil
            }
        }
        return best
    }
}

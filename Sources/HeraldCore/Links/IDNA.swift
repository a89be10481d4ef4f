import Foundation

// MARK: - IDNA

/// UTS #46 ToASCII as the standard calls it (non-transitional, CheckBidi, CheckJoiners, no STD3 rules),
/// for the part of Unicode Herald maps exactly; every other non-ASCII code point is refused.
///
/// Mapping is NFKC, then the per-code-point lower-case mapping, then NFC. For the code points let in
/// by `isMappable` that equals the UTS #46 mapping table; the result must consist of ASCII and code
/// points `isValid` lists (all UTS #46 "valid" or "deviation", left-to-right, no joiners), so the
/// bidi and joiner rules have nothing to reject.
enum IDNA {
    static func toASCII(_ domain: String) -> String? {
        let mapped: String
        if domain.unicodeScalars.allSatisfy(\.isASCII) {
            mapped = domain.lowercased()
        } else {
            guard domain.unicodeScalars.allSatisfy({ $0.isASCII || isMappable($0) }) else { return nil }
            mapped = map(domain)
        }
        var labels: [String] = []
        for label in mapped.split(separator: ".", omittingEmptySubsequences: false) {
            guard let ascii = labelToASCII(String(label)) else { return nil }
            labels.append(ascii)
        }
        let result = labels.joined(separator: ".")
        return result.isEmpty ? nil : result
    }

    /// NFKC, lower case code point by code point, NFC; ideographic full stops become `.`.
    static func map(_ domain: String) -> String {
        let compatible = domain.precomposedStringWithCompatibilityMapping
        let lowered = String(compatible.unicodeScalars.map { $0.properties.lowercaseMapping }.joined())
        let composed = lowered.precomposedStringWithCanonicalMapping
        return String(scalars: composed.unicodeScalars.map { $0 == "\u{3002}" ? "." : $0 })
    }

    /// DNS's longest label. Herald refuses `xn--` labels, given or produced, that are longer: no browser
    /// can resolve them, and the bound keeps Punycode's quadratic work small (the standard sets none).
    static let maxLabelLength = 63

    /// An ASCII label as it is (a canonical `xn--` label only), a mapped Unicode label as `xn--` Punycode.
    static func labelToASCII(_ label: String) -> String? {
        let isASCII = label.unicodeScalars.allSatisfy(\.isASCII)
        if isASCII && !label.hasPrefix("xn--") { return label }
        // Punycode is never shorter than its input, so this also bounds the work for a Unicode label.
        guard label.unicodeScalars.count <= maxLabelLength else { return nil }
        if isASCII {
            let encoded = String(label.dropFirst(4))
            guard let decoded = Punycode.decode(encoded), !decoded.allSatisfy(\.isASCII),
                isValidUnicodeLabel(String(scalars: decoded)), Punycode.encode(decoded) == encoded
            else { return nil }
            return label
        }
        guard isValidUnicodeLabel(label), let encoded = Punycode.encode(Array(label.unicodeScalars)),
            encoded.count + 4 <= maxLabelLength
        else { return nil }
        return "xn--" + encoded
    }

    /// A label with non-ASCII letters: NFC, only `isValid` code points and `a-z0-9-`, no `xn--` prefix,
    /// and no hyphen where UTS #46's CheckHyphens would look (Herald does not rely on browsers skipping it).
    static func isValidUnicodeLabel(_ label: String) -> Bool {
        let scalars = Array(label.unicodeScalars)
        guard label == label.precomposedStringWithCanonicalMapping, scalars.first != "-", scalars.last != "-",
            !(scalars.count >= 4 && scalars[2] == "-" && scalars[3] == "-")
        else { return false }
        return scalars.allSatisfy { scalar in
            scalar.isASCII ? ("a"..."z").contains(scalar) || scalar.isASCIIDigit || scalar == "-" : isValid(scalar)
        }
    }

    /// Lower-case letters UTS #46 keeps as they are; checked one by one against Chromium (CJK and
    /// Hangul by sample) in Tests/support/url_table.json.
    static func isValid(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00DF...0x00F6, 0x00F8...0x00FF: true  // Latin-1 (ß is a deviation, kept)
        case 0x0100...0x017F: isLatinExtendedALetter(scalar)
        case 0x0390, 0x03AC...0x03CE: true  // Greek (ς is a deviation, kept)
        case 0x0430...0x045F: true  // Cyrillic
        case 0x3041...0x3096, 0x30A1...0x30FA, 0x30FC: true  // Hiragana, Katakana
        case 0x4E00...0x9FA5: true  // CJK Unified Ideographs (Unicode 1.1)
        case 0xAC00...0xD7A3: true  // Hangul syllables
        default: false
        }
    }

    /// A lower-case Latin Extended-A letter that NFKC keeps (not ĳ, ŀ, ŉ or ſ).
    static func isLatinExtendedALetter(_ scalar: Unicode.Scalar) -> Bool {
        let text = String(scalar)
        return scalar.properties.isLowercase && text.precomposedStringWithCompatibilityMapping == text
    }

    /// Input code points that map into `isValid` letters or ASCII: upper-case forms of those letters,
    /// fullwidth ASCII, halfwidth Katakana, ideographic full stops and combining diacritics (which NFC
    /// must then compose, or the label is refused).
    static func isMappable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00C0...0x00D6, 0x00D8...0x00DE, 0x0100...0x017F, 0x0386...0x03AB, 0x0400...0x042F:
            isValid(scalar) || isUpperCaseOfValid(scalar)
        case 0x0300...0x033F, 0x0346...0x034E, 0x0350...0x036F: true  // combining diacritical marks
        case 0xFF01...0xFF5E, 0xFF66...0xFF9D: true  // fullwidth ASCII, halfwidth Katakana
        case 0x3002, 0xFF61: true  // ideographic full stops
        default: isValid(scalar)
        }
    }

    /// An upper-case letter whose lower-case mapping is one `isValid` code point.
    static func isUpperCaseOfValid(_ scalar: Unicode.Scalar) -> Bool {
        let lower = scalar.properties.lowercaseMapping.unicodeScalars
        return lower.count == 1 && lower.first != scalar && isValid(lower.first!)
    }
}

// MARK: - Punycode

/// Punycode (RFC 3492) with the `xn--` prefix left to the caller; nil on overflow or bad input.
enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 0x80
    private static let maxValue = Int(Int32.max)

    static func encode(_ input: [Unicode.Scalar]) -> String? {
        var output = String(scalars: input.filter(\.isASCII))
        let basicCount = output.unicodeScalars.count
        if basicCount > 0 { output += "-" }
        var n = initialN
        var delta = 0
        var bias = initialBias
        var handled = basicCount
        let codePoints = input.map { Int($0.value) }
        while handled < codePoints.count {
            let next = codePoints.filter { $0 >= n }.min()!
            guard (next - n) <= (maxValue - delta) / (handled + 1) else { return nil }
            delta += (next - n) * (handled + 1)
            n = next
            for codePoint in codePoints {
                if codePoint < n {
                    delta += 1
                    guard delta <= maxValue else { return nil }
                }
                guard codePoint == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias)
                    if q < t { break }
                    output.unicodeScalars.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.unicodeScalars.append(digit(q))
                bias = adapt(delta, handled + 1, firstTime: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }

    static func decode(_ input: String) -> [Unicode.Scalar]? {
        let scalars = Array(input.unicodeScalars)
        let delimiter = scalars.lastIndex(of: "-")
        var output = delimiter.map { Array(scalars[..<$0]) } ?? []
        guard output.allSatisfy(\.isASCII) else { return nil }
        var position = delimiter.map { $0 + 1 } ?? 0
        var n = initialN
        var i = 0
        var bias = initialBias
        while position < scalars.count {
            let oldI = i
            var weight = 1
            var k = base
            while true {
                guard position < scalars.count, let value = digitValue(scalars[position]) else { return nil }
                position += 1
                guard value <= (maxValue - i) / weight else { return nil }
                i += value * weight
                let t = threshold(k, bias)
                if value < t { break }
                guard weight <= maxValue / (base - t) else { return nil }
                weight *= base - t
                k += base
            }
            let length = output.count + 1
            bias = adapt(i - oldI, length, firstTime: oldI == 0)
            guard i / length <= maxValue - n else { return nil }
            n += i / length
            i %= length
            guard let scalar = Unicode.Scalar(UInt32(n)) else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        return output
    }

    private static func threshold(_ k: Int, _ bias: Int) -> Int {
        k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
    }

    private static func adapt(_ delta: Int, _ numPoints: Int, firstTime: Bool) -> Int {
        var delta = firstTime ? delta / damp : delta / 2
        delta += delta / numPoints
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    /// 0...25 as `a-z`, 26...35 as `0-9`.
    private static func digit(_ value: Int) -> Unicode.Scalar {
        Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26))
    }

    private static func digitValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar {
        case "a"..."z": Int(scalar.value - 0x61)
        case "A"..."Z": Int(scalar.value - 0x41)
        case "0"..."9": Int(scalar.value - 0x30) + 26
        default: nil
        }
    }
}

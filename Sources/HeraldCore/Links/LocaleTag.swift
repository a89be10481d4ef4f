/// A BCP 47 language tag such as `pl` or `pl-PL`, normalised (`pl_pl` → `pl-PL`).
public struct LocaleTag: Hashable, Sendable, CustomStringConvertible, Codable {
    public let value: String
    public var description: String { value }

    /// The language subtag, lower-cased (`pl` for `pl-PL`).
    public var language: String { String(value.prefix { $0 != "-" }) }

    /// Scripts written right to left; their HTML gets `dir="rtl"`.
    private static let rightToLeft: Set<String> = ["ar", "fa", "he", "ur", "ps", "yi", "dv", "ckb", "sd", "ug"]

    public var isRightToLeft: Bool { Self.rightToLeft.contains(language) }

    /// A tag the ledger stored after normalizing it: taken as it is.
    public init(stored value: String) {
        self.value = value
    }

    public init(_ raw: String) throws {
        let parts = raw.replacingOccurrences(of: "_", with: "-").split(separator: "-", omittingEmptySubsequences: false)
        guard raw.utf8.count <= 35, let first = parts.first, (2...8).contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLetter }),
            parts.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else {
            throw HeraldError(.invalidLocale, "not a language tag: \(EmailAddress.printable(raw))")
        }
        value = parts.enumerated().map { index, part in
            index == 0 ? part.lowercased() : (part.count == 2 ? part.uppercased() : part.lowercased())
        }.joined(separator: "-")
    }

    /// Candidates from most to least specific, ending with `fallback`: `pl-PL` → `pl-PL`, `pl`, `en`.
    public func fallbackChain(to fallback: LocaleTag) -> [LocaleTag] {
        var chain: [LocaleTag] = []
        var parts = value.split(separator: "-")
        while !parts.isEmpty {
            if let tag = try? LocaleTag(parts.joined(separator: "-")), !chain.contains(tag) { chain.append(tag) }
            parts.removeLast()
        }
        if !chain.contains(fallback) { chain.append(fallback) }
        return chain
    }
}

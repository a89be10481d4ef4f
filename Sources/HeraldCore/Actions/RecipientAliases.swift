/// Which spellings of one mailbox the per-recipient limits count as one (`limits.ignorePlusTags`,
/// `limits.dotlessDomains`): the cooldown, the daily cap and the hourly quota of an address without an account.
///
/// Mail providers deliver several spellings to one mailbox: `victim+anything@` wherever sub-addressing is
/// supported, and at Gmail every placement of dots (`v.ictim@`, `vic.tim@`) and the `googlemail.com` domain.
/// Counted apart, each spelling would get its own limits, and one mailbox could be flooded through them.
///
/// ```swift
/// RecipientAliases.standard.key(try EmailAddress("Vic.Tim+x@googlemail.com"))   // "victim@gmail.com"
/// ```
public struct RecipientAliases: Sendable, Hashable {
    /// Drop a `+tag` after the local part, at every domain.
    public var ignorePlusTags: Bool
    /// Domains whose local parts ignore dots; `googlemail.com` listed here also counts as `gmail.com`.
    public var dotlessDomains: Set<String>

    public init(ignorePlusTags: Bool = true, dotlessDomains: Set<String> = Self.gmail) {
        self.ignorePlusTags = ignorePlusTags
        self.dotlessDomains = Set(dotlessDomains.map { $0.lowercased() })
    }

    /// Gmail's domains, the default `dotlessDomains`.
    public static let gmail: Set<String> = ["gmail.com", "googlemail.com"]
    /// `+tags` dropped everywhere, Gmail's dots ignored: the defaults.
    public static let standard = RecipientAliases()

    /// The mailbox `address` is counted under.
    public func key(_ address: EmailAddress) -> String {
        let value = address.value
        let at = value.lastIndex(of: "@")!
        var local = value[..<at]
        var domain = value[value.index(after: at)...]
        if ignorePlusTags, let plus = local.firstIndex(of: "+"), plus != local.startIndex { local = local[..<plus] }
        if dotlessDomains.contains(String(domain)) {
            let dotless = local.filter { $0 != "." }
            // A local part of dots only stays as written: it names no other mailbox.
            if !dotless.isEmpty { local = Substring(dotless) }
            if domain == "googlemail.com" { domain = "gmail.com" }
        }
        return local + "@" + domain
    }
}

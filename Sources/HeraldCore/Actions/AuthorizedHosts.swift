/// The hosts a browser page may be on to talk to Herald: the `links.authorizedDomains`, lowercased, where
/// `localhost` also admits the loopback addresses `127.0.0.1` and `[::1]` (a page served from either is the
/// developer's own machine). CORS, the JS SDK's sign-in handler and its helper iframe all ask this one list.
public struct AuthorizedHosts: Sendable, Hashable {
    /// In configuration order, without repeats; the loopback addresses follow when `localhost` is listed.
    public let names: [String]
    private let lookup: Set<String>

    public init(domains: [String]) {
        var names: [String] = []
        var seen = Set<String>()
        for name in domains.map({ $0.lowercased() }) + (domains.contains { $0.lowercased() == "localhost" } ? ["127.0.0.1", "[::1]"] : [])
        where seen.insert(name).inserted {
            names.append(name)
        }
        self.names = names
        lookup = seen
    }

    /// Whether a page on `host` (as a WHATWG URL spells it: lowercase, IPv6 in brackets) may talk to Herald.
    public func contains(_ host: String) -> Bool { lookup.contains(host.lowercased()) }
}

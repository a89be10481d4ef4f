#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address or CIDR block (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7`), for trusted proxies and for
/// keying clients by network.
///
/// ```swift
/// let proxies = try IPNetwork("10.0.0.0/8")
/// proxies.contains("10.1.2.3")   // true
/// ```
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), with the bits beyond `prefix` cleared.
    public let bytes: [UInt8]
    public let prefix: Int

    /// - Throws: `INVALID_CONFIGURATION` for anything but an address or an address/prefix.
    public init(_ text: String) throws {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else {
            throw HeraldError(.invalidConfiguration, "'\(text)' is not an IP address or CIDR block")
        }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...bits).contains(given) else {
                throw HeraldError(.invalidConfiguration, "'\(text)' has a prefix outside 0…\(bits)")
            }
            prefix = given
        }
        self.init(bytes: address, prefix: prefix)
    }

    init(bytes: [UInt8], prefix: Int) {
        self.bytes = Self.masked(bytes, prefix)
        self.prefix = prefix
    }

    /// Whether `address` (textual; IPv4-mapped IPv6 counts as IPv4) lies in this block.
    public func contains(_ address: String) -> Bool {
        guard let parsed = Self.parse(address), parsed.count == bytes.count else { return false }
        return Self.masked(parsed, prefix) == bytes
    }

    public var description: String {
        let address =
            bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        return "\(address)/\(prefix)"
    }

    /// The network a client is counted under: IPv4 by address, IPv6 by `ipv6Prefix` bits (`limits.ipv6ClientPrefix`:
    /// /64 by default, as one host usually holds a whole /64; /48 where one site hands its hosts many /64s).
    /// nil for text that is not an address.
    public static func client(_ address: String, ipv6Prefix: Int = defaultIPv6ClientPrefix) -> IPNetwork? {
        guard let bytes = parse(address) else { return nil }
        return IPNetwork(bytes: bytes, prefix: bytes.count == 4 ? 32 : ipv6Prefix)
    }

    /// The IPv6 prefix a client is counted under unless configured otherwise.
    public static let defaultIPv6ClientPrefix = 64

    /// What the ledger keeps of a client address: IPv4 truncated to /24, IPv6 to /48 (never the address itself).
    public static func ledgerKey(_ address: String) -> String {
        guard let bytes = parse(address) else { return "unknown" }
        return IPNetwork(bytes: bytes, prefix: bytes.count == 4 ? 24 : 48).description
    }

    /// The client of a request that reached us from `peer` with these `X-Forwarded-For` values: the peer,
    /// unless it is a trusted proxy; then the right-most forwarded address that is not one (a client can
    /// prepend anything, but not append). When every forwarded address is trusted, the left-most.
    public static func client(peer: String?, forwardedFor: [String], trusted: [IPNetwork]) -> String? {
        guard let peer else { return nil }
        guard !trusted.isEmpty, trusted.contains(where: { $0.contains(peer) }) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { Self.address(ofHop: Self.trimmed(String($0))) }
        var client = peer
        for hop in hops.reversed() {
            guard parse(hop) != nil else { return client }  // garbage: stop at the last hop we could read
            client = hop
            if !trusted.contains(where: { $0.contains(hop) }) { return hop }
        }
        return client
    }

    /// The bytes of an IPv4 or IPv6 address; IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as IPv4.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff { return Array(bytes[12...]) }
        return bytes
    }

    /// The address of one `X-Forwarded-For` hop, which some proxies write with a port: `1.2.3.4:5678`,
    /// `[2001:db8::1]:443` or `[2001:db8::1]`.
    static func address(ofHop hop: String) -> String {
        if hop.hasPrefix("["), let close = hop.firstIndex(of: "]") {
            return String(hop[hop.index(after: hop.startIndex)..<close])
        }
        let parts = hop.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, parts[0].contains("."), parts[1].allSatisfy(\.isNumber) { return String(parts[0]) }
        return hop
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    private static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 8 ? byte : byte & ~(UInt8(0xff) >> keep)
        }
    }
}

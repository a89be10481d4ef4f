#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// IP addresses as text: validation and the one spelling `inet_ntop` gives (`::ffff:10.0.0.1` → `10.0.0.1`),
/// so a configured address compares equal to a peer's whatever way it was written.
public enum IPAddressText {
    public static func isValid(_ text: String) -> Bool { canonical(text) != nil }

    /// The canonical spelling of an IPv4 or IPv6 address, or nil when `text` is neither.
    public static func canonical(_ text: String) -> String? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return ntop(AF_INET, &v4, length: Int(INET_ADDRSTRLEN)) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let spelled = ntop(AF_INET6, &v6, length: Int(INET6_ADDRSTRLEN))
        if let spelled, spelled.hasPrefix("::ffff:"), spelled.contains(".") { return String(spelled.dropFirst(7)) }
        return spelled
    }

    private static func ntop(_ family: Int32, _ address: UnsafeRawPointer, length: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: length)
        guard inet_ntop(family, address, &buffer, socklen_t(length)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

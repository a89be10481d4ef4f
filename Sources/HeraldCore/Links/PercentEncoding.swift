/// Percent-encoding for query values, byte by byte, so nested links survive one round of decoding.
public enum PercentEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    /// Encodes everything but RFC 3986 unreserved characters and the given extra ASCII characters.
    public static func encode(_ value: String, keeping extra: String = "") -> String {
        let keep = Set(extra.utf8)
        var out = [UInt8]()
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if isUnreserved(byte) || keep.contains(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `name=value&…`, both percent-encoded (a query string or a form body).
    public static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(encode($0))=\(encode($1))" }.joined(separator: "&")
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}

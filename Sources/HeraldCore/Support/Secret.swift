/// Comparisons of secrets (tokens, keys, hashes) that take the same time wherever they differ.
public enum Secret {
    public static func equal(_ a: String, _ b: String) -> Bool {
        equal(Array(a.utf8), Array(b.utf8))
    }

    public static func equal(_ x: [UInt8], _ y: [UInt8]) -> Bool {
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

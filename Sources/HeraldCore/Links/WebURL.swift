import Foundation

/// An absolute http(s) URL read the way browsers read it (the WHATWG URL Standard), or refused.
///
/// Foundation's `URLComponents` follows RFC 3986 and so disagrees with browsers on inputs such as
/// `https://evil.com\@app.example.com/`, which a browser opens at `evil.com`. `WebURL` follows the
/// URL Standard's basic URL parser with no base URL, for the two special schemes http and https:
/// ```swift
/// let url = WebURL("https://evil.com\\@app.example.com/")
/// url?.host  // "evil.com"
/// url?.href  // "https://evil.com/@app.example.com/"
/// ```
///
/// `init` returns nil for input the standard fails, for any other scheme, and for input a browser
/// could read differently from Herald. Refusing is safe; accepting with another host is not. So:
/// - Non-ASCII hosts are mapped (UTS #46) only when every code point is in a small set Herald maps
///   exactly (letters of Latin-1, Latin Extended-A, Greek, Cyrillic, kana, CJK, Hangul; fullwidth
///   ASCII; ideographic full stops); anything else (compatibility forms, ignorables, joiners,
///   symbols, right-to-left scripts) is refused rather than guessed.
/// - `xn--` labels are kept only when they are canonical Punycode of such a label, at most 63 long.
/// - Hosts containing `*` or a space, and IPv6 addresses that Chromium reads leniently, are refused
///   because browsers disagree on them.
/// - Paths percent-encode `|`, and userinfo `'`, as Chromium does (the standard keeps them); every
///   parser reads the encoded form alike.
public struct WebURL: Sendable, Hashable {
    /// "http" or "https".
    public let scheme: String
    let username: String
    let password: String
    /// The serialized host: a lower-case ASCII domain, a dotted-decimal IPv4 address or `[IPv6]`.
    public let host: String
    /// The port, or nil when it is the scheme's default.
    public let port: Int?
    let path: [String]
    let query: String?
    let fragment: String?

    /// The URL serialized as the standard does: what a browser navigates to for this input.
    public var href: String {
        var out = scheme + "://"
        if !username.isEmpty || !password.isEmpty {
            out += username
            if !password.isEmpty { out += ":" + password }
            out += "@"
        }
        out += host
        if let port { out += ":\(port)" }
        out += "/" + path.joined(separator: "/")
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// Parses `string` as a browser would parse it with no base URL; nil when it fails or is refused.
    public init?(_ string: String) {
        let input = Self.removingWhitespace(string)
        guard let (scheme, afterScheme) = Self.splitScheme(input) else { return nil }
        // Special authority slashes and ignore-slashes states: any run of `/` and `\` is skipped.
        let rest = afterScheme.drop { $0 == "/" || $0 == "\\" }
        let authorityEnd = rest.firstIndex { "/\\?#".unicodeScalars.contains($0) } ?? rest.endIndex
        let authority = rest[..<authorityEnd]

        // Authority state: userinfo ends at the last `@`.
        let atSign = authority.lastIndex(of: "@")
        let hostAndPort = atSign.map { authority.after($0) } ?? authority
        let (hostText, portText) = Self.splitPort(hostAndPort)
        let defaultPort = scheme == "https" ? 443 : 80
        guard !hostText.isEmpty, let host = WebHost.parse(hostText),
            let port = Self.parsePort(portText, defaultPort: defaultPort)
        else { return nil }
        let (username, password) = atSign.map { Self.splitUserinfo(authority[..<$0]) } ?? ("", "")

        // Path, query and fragment states: the fragment starts at the first `#`, the query at the first `?` before it.
        let afterAuthority = rest[authorityEnd...]
        let hash = afterAuthority.firstIndex(of: "#")
        let beforeFragment = afterAuthority[..<(hash ?? afterAuthority.endIndex)]
        let question = beforeFragment.firstIndex(of: "?")

        self.scheme = scheme
        self.username = username
        self.password = password
        self.host = host
        self.port = port == defaultPort ? nil : port
        self.path = Self.resolvePath(beforeFragment[..<(question ?? beforeFragment.endIndex)])
        self.query = question.map { PercentEncodeSet.specialQuery.encode(beforeFragment.after($0)) }
        self.fragment = hash.map { PercentEncodeSet.fragment.encode(afterAuthority.after($0)) }
    }
}

// MARK: - Parser steps

extension WebURL {
    fileprivate typealias Scalars = ArraySlice<Unicode.Scalar>

    /// Trims leading and trailing C0 controls and spaces, and removes every ASCII tab and newline.
    private static func removingWhitespace(_ string: String) -> Scalars {
        let scalars = Array(string.unicodeScalars)
        let isControlOrSpace = { (scalar: Unicode.Scalar) in scalar.value <= 0x20 }
        guard let first = scalars.firstIndex(where: { !isControlOrSpace($0) }),
            let last = scalars.lastIndex(where: { !isControlOrSpace($0) })
        else { return [] }
        return ArraySlice(scalars[first...last].filter { $0 != "\t" && $0 != "\n" && $0 != "\r" })
    }

    /// Scheme start and scheme states: an ASCII letter, then letters, digits, `+`, `-` or `.`, then `:`.
    /// Only the special schemes http and https are kept; with no base URL nothing else can be absolute.
    private static func splitScheme(_ input: Scalars) -> (String, Scalars)? {
        let isSchemeCodePoint = { (scalar: Unicode.Scalar) in
            scalar.isASCIILetter || scalar.isASCIIDigit || "+-.".unicodeScalars.contains(scalar)
        }
        guard let first = input.first, first.isASCIILetter,
            let colon = input.firstIndex(where: { !isSchemeCodePoint($0) }), input[colon] == ":"
        else { return nil }
        let scheme = String(scalars: input[..<colon]).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        return (scheme, input.after(colon))
    }

    /// Host state: the host ends at the first `:` outside `[...]`; the rest (after the `:`) is the port.
    private static func splitPort(_ hostAndPort: Scalars) -> (host: Scalars, port: Scalars) {
        var insideBrackets = false
        for index in hostAndPort.indices {
            switch hostAndPort[index] {
            case "[": insideBrackets = true
            case "]": insideBrackets = false
            case ":" where !insideBrackets: return (hostAndPort[..<index], hostAndPort.after(index))
            default: continue
            }
        }
        return (hostAndPort, [])
    }

    /// Port state: ASCII digits (leading zeros allowed) up to 65535; no digits means the default port.
    private static func parsePort(_ digits: Scalars, defaultPort: Int) -> Int? {
        guard digits.allSatisfy(\.isASCIIDigit) else { return nil }
        let significant = digits.drop { $0 == "0" }
        guard significant.count <= 5 else { return nil }
        if digits.isEmpty { return defaultPort }
        let value = significant.reduce(0) { $0 * 10 + Int($1.value - 0x30) }
        return value <= 65535 ? value : nil
    }

    /// Authority state: the username ends at the first `:`; both parts use the userinfo encode set.
    private static func splitUserinfo(_ userinfo: Scalars) -> (String, String) {
        guard let colon = userinfo.firstIndex(of: ":") else {
            return (PercentEncodeSet.userinfo.encode(userinfo), "")
        }
        let username = PercentEncodeSet.userinfo.encode(userinfo[..<colon])
        let password = PercentEncodeSet.userinfo.encode(userinfo.after(colon))
        return (username, password)
    }

    /// Path start and path states: segments split at `/` or `\`, percent-encoded, dot segments resolved.
    private static func resolvePath(_ raw: Scalars) -> [String] {
        var body = raw
        if let first = body.first, first == "/" || first == "\\" { body = body.dropFirst() }
        let segments = body.split(omittingEmptySubsequences: false) { $0 == "/" || $0 == "\\" }
        var path: [String] = []
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            let encoded = PercentEncodeSet.path.encode(segment)
            if isDoubleDotSegment(encoded) {
                if !path.isEmpty { path.removeLast() }
                if isLast { path.append("") }
            } else if isSingleDotSegment(encoded) {
                if isLast { path.append("") }
            } else {
                path.append(encoded)
            }
        }
        return path
    }

    /// `.` or `%2e`, in any case.
    private static func isSingleDotSegment(_ segment: String) -> Bool {
        segment == "." || segment.lowercased() == "%2e"
    }

    /// `..`, `.%2e`, `%2e.` or `%2e%2e`, in any case.
    private static func isDoubleDotSegment(_ segment: String) -> Bool {
        ["..", ".%2e", "%2e.", "%2e%2e"].contains(segment.lowercased())
    }
}

// MARK: - Percent-encoding

/// One of the standard's percent-encode sets: the C0 control set plus some printable ASCII.
struct PercentEncodeSet {
    let printable: Set<Unicode.Scalar>

    init(_ printable: String) { self.printable = Set(printable.unicodeScalars) }

    static let fragment = PercentEncodeSet(" \"<>`")
    static let specialQuery = PercentEncodeSet(" \"#<>'")
    /// The standard's path set plus `|`, which Chromium also encodes in paths.
    static let path = PercentEncodeSet(" \"#<>?`{}^|")
    /// The standard's userinfo set plus `'`, which Chromium also encodes there.
    static let userinfo = PercentEncodeSet(" \"#<>?`{}^|/:;=@[\\]'")

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value > 0x7E || printable.contains(scalar)
    }

    /// UTF-8 percent-encodes the code points in this set; an existing `%` is kept as it is.
    func encode(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
        var out = ""
        for scalar in scalars {
            if contains(scalar) {
                for byte in String(scalar).utf8 {
                    out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
                }
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

// MARK: - Small helpers

extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
    var isASCIIHexDigit: Bool { isASCIIDigit || ("a"..."f").contains(self) || ("A"..."F").contains(self) }
}

extension ArraySlice {
    /// The elements after `index`.
    func after(_ index: Index) -> SubSequence { self[self.index(after: index)...] }
}

extension String {
    init(scalars: some Sequence<Unicode.Scalar>) {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        self = String(view)
    }

    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

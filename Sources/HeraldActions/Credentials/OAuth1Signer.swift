import Crypto
import Foundation
import HeraldCore

/// Signs requests with OAuth 1.0a HMAC-SHA1 (RFC 5849 §3.4) under a consumer key and secret: how Herald asks
/// Twitter's `account/verify_credentials` whether a user's access token and secret are good.
///
/// ```swift
/// let signer = OAuth1Signer(consumerKey: key, consumerSecret: secret)
/// let header = signer.authorizationHeader(
///     method: "GET", url: "https://api.twitter.com/1.1/account/verify_credentials.json",
///     queryItems: [("include_email", "true"), ("skip_status", "true")],
///     token: accessToken, tokenSecret: accessTokenSecret, nonce: nonce, timestamp: now)
/// ```
struct OAuth1Signer: Sendable {
    let consumerKey: String
    let consumerSecret: String

    init(consumerKey: String, consumerSecret: String) {
        self.consumerKey = consumerKey
        self.consumerSecret = consumerSecret
    }

    /// The `Authorization` header value for one request. `queryItems` are the request's parameters, unencoded:
    /// its query and, for a form-encoded body, the body's pairs; pairs already in `url`'s query are signed too.
    /// `token` is absent when asking for a request token; `protocolItems` are further `oauth_` parameters of
    /// the header (`oauth_callback`, `oauth_verifier`).
    /// The caller supplies `nonce` and `timestamp` (seconds since 1970) so that a signature can be reproduced.
    func authorizationHeader(
        method: String,
        url: String,
        queryItems: [(String, String)],
        token: String?,
        tokenSecret: String,
        protocolItems: [(String, String)] = [],
        nonce: String,
        timestamp: Int
    ) -> String {
        var protocolParameters = [
            ("oauth_consumer_key", consumerKey),
            ("oauth_nonce", nonce),
            ("oauth_signature_method", "HMAC-SHA1"),
            ("oauth_timestamp", String(timestamp)),
            ("oauth_version", "1.0"),
        ]
        if let token { protocolParameters.append(("oauth_token", token)) }
        protocolParameters += protocolItems
        let baseString = Self.signatureBaseString(method: method, url: url, parameters: protocolParameters + queryItems)
        protocolParameters.append(("oauth_signature", signature(of: baseString, tokenSecret: tokenSecret)))
        let fields = protocolParameters.sorted { $0.0 < $1.0 }.map { name, value in
            "\(Self.percentEncode(name))=\"\(Self.percentEncode(value))\""
        }
        return "OAuth " + fields.joined(separator: ", ")
    }

    /// HMAC-SHA1 of the signature base string under `enc(consumerSecret)&enc(tokenSecret)`, base64 (§3.4.2).
    func signature(of baseString: String, tokenSecret: String) -> String {
        let keyText = "\(Self.percentEncode(consumerSecret))&\(Self.percentEncode(tokenSecret))"
        let key = SymmetricKey(data: Data(keyText.utf8))
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Data(baseString.utf8), using: key)
        return Data(mac).base64EncodedString()
    }

    /// `METHOD&enc(base string URI)&enc(normalized parameters)` (§3.4.1), where `parameters` are every
    /// parameter but `oauth_signature` and `realm`, unencoded; pairs in `url`'s query join them.
    static func signatureBaseString(method: String, url: String, parameters: [(String, String)]) -> String {
        let (baseURI, query) = splitURL(url)
        let normalized = normalizedParameters(parameters + queryPairs(query))
        return "\(method.uppercased())&\(percentEncode(baseURI))&\(percentEncode(normalized))"
    }

    /// §3.4.1.2: lower-case scheme and host, no default port, no user info, query or fragment; the query apart.
    static func splitURL(_ url: String) -> (baseURI: String, query: Substring) {
        let withoutFragment = url.prefix { $0 != "#" }
        let target = withoutFragment.prefix { $0 != "?" }
        let query = withoutFragment.dropFirst(target.count + 1)
        guard let schemeEnd = target.range(of: "://") else {
            return (String(target), query)
        }
        let scheme = target[..<schemeEnd.lowerBound].lowercased()
        let afterScheme = target[schemeEnd.upperBound...]
        let authority = afterScheme.prefix { $0 != "/" }
        let path = afterScheme.dropFirst(authority.count)
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        // A bracketed IPv6 host holds colons of its own: the port's colon is the one after "]".
        let portColon = hostAndPort.lastIndex(of: ":").flatMap { colon in
            hostAndPort[colon...].contains("]") ? nil : colon
        }
        let host = hostAndPort[..<(portColon ?? hostAndPort.endIndex)].lowercased()
        let port = portColon.map { hostAndPort[hostAndPort.index(after: $0)...] } ?? ""
        let isDefaultPort = port.isEmpty || (scheme == "http" && port == "80") || (scheme == "https" && port == "443")
        let netloc = isDefaultPort ? host : "\(host):\(port)"
        return ("\(scheme)://\(netloc)\(path.isEmpty ? "/" : path)", query)
    }

    /// A query's pairs, decoded as `application/x-www-form-urlencoded` (§3.4.1.3.1); a name without `=` has
    /// an empty value.
    static func queryPairs(_ query: Substring) -> [(String, String)] {
        query.split(separator: "&").map { pair in
            let name = pair.prefix { $0 != "=" }
            let value = pair.dropFirst(name.count + 1)
            return (formDecode(name), formDecode(value))
        }
    }

    /// §3.4.1.3.2: encode each name and value, sort by name then value (byte order), join as `name=value&…`.
    static func normalizedParameters(_ parameters: [(String, String)]) -> String {
        let encoded = parameters.map { (percentEncode($0.0), percentEncode($0.1)) }
        let sorted = encoded.sorted { left, right in
            left.0 == right.0
                ? left.1.utf8.lexicographicallyPrecedes(right.1.utf8)
                : left.0.utf8.lexicographicallyPrecedes(right.0.utf8)
        }
        return sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// §3.6: every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` becomes `%XX`, upper-case hex: RFC 3986's
    /// unreserved set, as `PercentEncoding` encodes.
    static func percentEncode(_ text: String) -> String { PercentEncoding.encode(text) }

    /// `+` is a space and `%XX` a byte; a malformed escape is kept as written.
    private static func formDecode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

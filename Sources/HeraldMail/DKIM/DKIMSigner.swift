import Crypto
import Foundation
import HeraldCore

/// Signs outgoing messages with DKIM (RFC 6376): relaxed/relaxed, one `DKIM-Signature` per key, added above the
/// message's own headers.
///
/// The signed headers are those a mailbox provider checks and a forwarder must not change: `From` (listed once
/// more than it occurs, so a second `From` added in transit breaks the signature), `To`, `Subject`, `Date`,
/// `Message-ID`, `Reply-To`, the MIME headers, `Auto-Submitted` and the `List-Unsubscribe` pair (RFC 8058
/// requires both signed).
///
/// ```swift
/// let signer = DKIMSigner(domain: "example.com", keys: [try DKIMKey(pemFile: path, algorithm: .rsa, selector: "herald")])
/// let signed = try signer.sign(message.encoded(), at: message.date)
/// ```
public struct DKIMSigner: Sendable {
    public let domain: String
    public let keys: [DKIMKey]

    /// The headers signed when present, in the order of `h=`.
    static let signedHeaders = [
        "from", "to", "subject", "date", "message-id", "reply-to", "mime-version", "content-type", "auto-submitted",
        "list-unsubscribe", "list-unsubscribe-post",
    ]

    public init(domain: String, keys: [DKIMKey]) {
        self.domain = domain
        self.keys = keys
    }

    /// The signer `configuration` describes; nil when `dkim.domain` is empty.
    /// - Throws: `INVALID_CONFIGURATION` naming a key file that cannot be read or holds the wrong kind of key.
    public init?(configuration: HeraldConfiguration.DKIM) throws {
        guard !configuration.domain.isEmpty else { return nil }
        var keys = [try DKIMKey(pemFile: configuration.rsaKeyFile, algorithm: .rsa, selector: configuration.selector)]
        if !configuration.ed25519KeyFile.isEmpty {
            keys.append(try DKIMKey(pemFile: configuration.ed25519KeyFile, algorithm: .ed25519, selector: configuration.ed25519Selector))
        }
        self.init(domain: configuration.domain, keys: keys)
    }

    /// `message` with a `DKIM-Signature` header per key in front; `date` is the signature's `t=`.
    /// - Throws: only if the crypto library fails to sign.
    public func sign(_ message: [UInt8], at date: Date) throws -> [UInt8] {
        let (fields, bodyStart) = DKIMCanonicalization.split(message)
        let bodyHash = Data(SHA256.hash(data: DKIMCanonicalization.body(message[bodyStart...]))).base64EncodedString()

        // Each named header's instances are signed from the last one up (RFC 6376 §5.4.2).
        var remaining: [String: [Int]] = [:]
        for (index, field) in fields.enumerated() where Self.signedHeaders.contains(field.name) {
            remaining[field.name, default: []].append(index)
        }
        var names: [String] = []
        var canonical: [UInt8] = []
        canonical.reserveCapacity(1024)
        for name in Self.signedHeaders {
            while let index = remaining[name]?.popLast() {
                names.append(name)
                DKIMCanonicalization.header(name: fields[index].name.utf8, value: fields[index].value, into: &canonical)
                canonical.append(contentsOf: [13, 10])
            }
        }
        names.append("from")

        var headers: [UInt8] = []
        for key in keys {
            let value =
                " v=1; a=\(key.algorithm.tag); c=relaxed/relaxed; d=\(domain); s=\(key.selector);\r\n"
                + "\tt=\(Int(date.timeIntervalSince1970)); h=\(names.joined(separator: ":"));\r\n\tbh=\(bodyHash);\r\n\tb="
            var signed = canonical
            DKIMCanonicalization.header(name: "dkim-signature".utf8, value: value.utf8, into: &signed)
            let signature = Data(try key.sign(signed)).base64EncodedString()
            headers.append(contentsOf: "DKIM-Signature:\(value)".utf8)
            // Folded every 72 characters: whitespace inside b= is not part of the signature.
            var rest = Substring(signature)
            while !rest.isEmpty {
                headers.append(contentsOf: rest.prefix(72).utf8)
                rest = rest.dropFirst(72)
                if !rest.isEmpty { headers.append(contentsOf: "\r\n\t".utf8) }
            }
            headers.append(contentsOf: [13, 10])
        }
        return headers + message
    }
}

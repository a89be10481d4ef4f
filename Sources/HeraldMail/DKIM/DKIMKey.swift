import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// A DKIM signing key with its selector: RSA (`rsa-sha256`, 2048 bits or more) or Ed25519 (`ed25519-sha256`,
/// RFC 8463).
///
/// ```swift
/// let key = try DKIMKey(pemFile: "/etc/herald/dkim.pem", selector: "herald")
/// print(key.dnsRecord(domain: "example.com"))
/// ```
public struct DKIMKey: Sendable {
    public enum Algorithm: String, Sendable, CaseIterable {
        case rsa, ed25519

        /// The `a=` tag.
        var tag: String { self == .rsa ? "rsa-sha256" : "ed25519-sha256" }
    }

    enum Secret {
        case rsa(_RSA.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    let secret: Secret
    public let selector: String

    public var algorithm: Algorithm {
        switch secret {
        case .rsa: .rsa
        case .ed25519: .ed25519
        }
    }

    /// Reads a PEM private key (PKCS#1 or PKCS#8 RSA, PKCS#8 Ed25519) of the expected algorithm.
    /// - Throws: `INVALID_CONFIGURATION`, naming the file, when it cannot be read or holds another kind of key.
    public init(pemFile path: String, algorithm: Algorithm, selector: String) throws {
        guard let data = FileManager.default.contents(atPath: path), let pem = String(data: data, encoding: .utf8) else {
            throw HeraldError(.invalidConfiguration, "DKIM key \(path): cannot read the file")
        }
        do {
            try self.init(pem: pem, algorithm: algorithm, selector: selector)
        } catch let error as HeraldError {
            throw HeraldError(.invalidConfiguration, "DKIM key \(path): \(error.detail)")
        }
    }

    init(pem: String, algorithm: Algorithm, selector: String) throws {
        self.selector = selector
        switch algorithm {
        case .rsa:
            // CryptoExtras refuses keys under 2048 bits, which mailbox providers no longer accept either.
            guard let key = try? _RSA.Signing.PrivateKey(pemRepresentation: pem) else {
                throw HeraldError(.invalidConfiguration, "not a PEM RSA private key of at least 2048 bits")
            }
            secret = .rsa(key)
        case .ed25519:
            guard let key = try? Curve25519.Signing.PrivateKey(pemRepresentation: pem) else {
                throw HeraldError(.invalidConfiguration, "not a PEM (PKCS#8) Ed25519 private key")
            }
            secret = .ed25519(key)
        }
    }

    /// A new key: RSA of `bits` bits (2048, 3072 or 4096), or Ed25519.
    public static func generate(_ algorithm: Algorithm, bits: Int = 2048, selector: String) throws -> DKIMKey {
        switch algorithm {
        case .rsa:
            let size: _RSA.Signing.KeySize
            switch bits {
            case 2048: size = .bits2048
            case 3072: size = .bits3072
            case 4096: size = .bits4096
            default: throw HeraldError(.argumentError, "RSA keys are 2048, 3072 or 4096 bits, not \(bits)")
            }
            return DKIMKey(secret: .rsa(try _RSA.Signing.PrivateKey(keySize: size)), selector: selector)
        case .ed25519:
            return DKIMKey(secret: .ed25519(Curve25519.Signing.PrivateKey()), selector: selector)
        }
    }

    private init(secret: Secret, selector: String) {
        self.secret = secret
        self.selector = selector
    }

    /// The private key as PEM, for the key file.
    public var pemRepresentation: String {
        switch secret {
        case .rsa(let key): key.pemRepresentation
        case .ed25519(let key): key.pemRepresentation
        }
    }

    /// The TXT record's text: `v=DKIM1; k=rsa; p=<SubjectPublicKeyInfo>` or `k=ed25519; p=<the 32-byte key>`.
    public var recordText: String {
        switch secret {
        case .rsa(let key): "v=DKIM1; k=rsa; p=" + key.publicKey.derRepresentation.base64EncodedString()
        case .ed25519(let key): "v=DKIM1; k=ed25519; p=" + key.publicKey.rawRepresentation.base64EncodedString()
        }
    }

    /// The zone-file line to publish: `<selector>._domainkey.<domain>. IN TXT ( "…" "…" )`, its text cut into
    /// strings of at most 255 characters as DNS requires.
    public func dnsRecord(domain: String) -> String {
        var pieces: [String] = []
        var rest = Substring(recordText)
        while !rest.isEmpty {
            pieces.append("\"" + rest.prefix(255) + "\"")
            rest = rest.dropFirst(255)
        }
        return "\(selector)._domainkey.\(domain). IN TXT ( \(pieces.joined(separator: " ")) )"
    }

    /// The signature of SHA-256 of `data`: PKCS#1 v1.5 for RSA; for Ed25519, PureEdDSA over the hash itself (RFC 8463).
    func sign(_ data: [UInt8]) throws -> [UInt8] {
        let digest = SHA256.hash(data: data)
        switch secret {
        case .rsa(let key):
            return Array(try key.signature(for: digest, padding: .insecurePKCS1v1_5).rawRepresentation)
        case .ed25519(let key):
            return Array(try key.signature(for: Array(digest)))
        }
    }
}

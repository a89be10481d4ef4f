import CryptoExtras
import Foundation
import HeraldCore
import X509

/// The file of RSA keys that sign ID tokens (`tokens.keyFile`): generated on first use, never committed,
/// rotated by `herald keys rotate`.
///
/// The newest key signs; a key replaced by a newer one still verifies (and stays in the JWKS) until every
/// token it signed has expired. The file is JSON, mode 0600:
/// `{"keys":[{"kid":…,"algorithm":"RS256","createdAt":…,"retiredAt":…,"privateKey":PEM,"certificate":PEM}]}`.
public struct SigningKeyFile: Sendable {
    /// One key pair, its self-signed certificate (Google's x509 form of the public key), and its life.
    public struct Key: Codable, Sendable, Hashable {
        public let kid: String
        public let algorithm: String
        public let createdAt: Date
        /// When a newer key took over signing.
        public var retiredAt: Date?
        let privateKey: String
        public let certificate: String
    }

    private struct Contents: Codable {
        var keys: [Key]
    }

    public let path: String
    /// Oldest first; the last one signs.
    public private(set) var keys: [Key]

    /// How long a retired key keeps verifying and stays published. A running `herald serve` keeps signing
    /// with the key it started with until it restarts, so this is a day plus an ID token's lifetime:
    /// restart within a day of rotating and no token that was ever issued is refused early.
    public static let retiredKeyLifetime: TimeInterval = 86_400 + IDTokens.lifetime

    /// Reads the key file, creating it with one fresh key when it does not exist.
    ///
    /// - Throws: `INVALID_CONFIGURATION` for a file that cannot be read, written or parsed.
    public static func openOrCreate(path: String, now: Date = Date()) throws -> SigningKeyFile {
        if let existing = try read(path) { return existing }
        let file = SigningKeyFile(path: path, keys: [try makeKey(now: now)])
        // Two processes starting at once: the first file written wins and both use it.
        if try file.write(replacing: false) { return file }
        guard let winner = try read(path) else { throw problem(path, "it vanished while being created") }
        return winner
    }

    /// Adds a new signing key and retires the current one; drops keys retired long enough ago that
    /// nothing they signed is still valid.
    public mutating func rotate(now: Date = Date()) throws -> Key {
        let now = Self.wholeSeconds(now)  // as the file keeps times
        let key = try Self.makeKey(now: now)
        for index in keys.indices where keys[index].retiredAt == nil { keys[index].retiredAt = now }
        keys.removeAll { key in key.retiredAt.map { now.timeIntervalSince($0) > Self.retiredKeyLifetime } ?? false }
        keys.append(key)
        _ = try write(replacing: true)
        return key
    }

    /// The keys whose tokens may still be valid at `now`: the signing key (last) and recently retired ones.
    public func liveKeys(at now: Date = Date()) -> [Key] {
        keys.filter { key in key.retiredAt.map { now.timeIntervalSince($0) <= Self.retiredKeyLifetime } ?? true }
    }

    /// The RSA private key of `key`.
    static func privateKey(of key: Key, path: String) throws -> _RSA.Signing.PrivateKey {
        do {
            return try _RSA.Signing.PrivateKey(pemRepresentation: key.privateKey)
        } catch {
            throw problem(path, "key \(key.kid) is not a readable RSA private key")
        }
    }

    // MARK: - Files

    private static func read(_ path: String) throws -> SigningKeyFile? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw problem(path, "it cannot be read (\(error.localizedDescription))")
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        guard let contents = try? decoder.decode(Contents.self, from: data), !contents.keys.isEmpty,
            contents.keys.allSatisfy({ $0.algorithm == "RS256" })
        else { throw problem(path, "it is not a Herald signing key file") }
        guard Set(contents.keys.map(\.kid)).count == contents.keys.count else { throw problem(path, "two keys share a kid") }
        // Exactly one key signs, and it is the last (as `rotate` writes the file).
        guard contents.keys.filter({ $0.retiredAt == nil }).count == 1, contents.keys.last?.retiredAt == nil else {
            throw problem(path, "exactly one key, the last, must be unretired (the signing key)")
        }
        return SigningKeyFile(path: path, keys: contents.keys)
    }

    /// Writes the file with mode 0600 through a temporary file. Returns false when `replacing` is false
    /// and the file already exists.
    private func write(replacing: Bool) throws -> Bool {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Contents(keys: keys))
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        // A random name (two processes may share a PID across containers), created 0600 from the start.
        let temporary = "\(path).\(RandomToken.hex(bytes: 8)).tmp"
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.problem(path, "it cannot be written (errno \(errno))") }
        defer { unlink(temporary) }
        let written = data.withUnsafeBytes { bytes in Foundation.write(descriptor, bytes.baseAddress, bytes.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced else { throw Self.problem(path, "it cannot be written") }
        if replacing {
            guard rename(temporary, path) == 0 else { throw Self.problem(path, "it cannot be replaced") }
            return true
        }
        if link(temporary, path) == 0 { return true }
        if errno == EEXIST { return false }
        throw Self.problem(path, "it cannot be created")
    }

    private static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    private static func makeKey(now: Date) throws -> Key {
        let now = wholeSeconds(now)
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let kid = RandomToken.hex(bytes: 20)
        let issuer = try DistinguishedName { CommonName("herald securetoken \(kid)") }
        let certificateKey = Certificate.PrivateKey(privateKey)
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: certificateKey.publicKey,
            notValidBefore: now.addingTimeInterval(-300), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400), issuer: issuer,
            subject: issuer, signatureAlgorithm: .sha256WithRSAEncryption, extensions: Certificate.Extensions(),
            issuerPrivateKey: certificateKey)
        return Key(
            kid: kid, algorithm: "RS256", createdAt: now, retiredAt: nil, privateKey: privateKey.pemRepresentation,
            certificate: try certificate.serializeAsPEM().pemString + "\n")
    }

    private static func problem(_ path: String, _ detail: String) -> HeraldError {
        HeraldError(.invalidConfiguration, "tokens.keyFile \(path): \(detail)")
    }
}

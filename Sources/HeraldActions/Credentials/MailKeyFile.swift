import Crypto
import Foundation
import HeraldCore

/// The key that signs bounce addresses (VERP) and one-click unsubscribe links (`tokens.mailKeyFile`): 32 random
/// bytes as hex, created on first use with mode 0600, shared by every worker and server of one ledger.
///
/// A mail's envelope sender and its unsubscribe link outlive the process that sent it, so this key is a file,
/// not a per-process secret; it never enters the ledger.
public enum MailKeyFile {
    /// Reads the key, creating the file when it does not exist.
    ///
    /// - Throws: `INVALID_CONFIGURATION` for a file that cannot be read, written or parsed.
    public static func openOrCreate(path: String) throws -> SymmetricKey {
        if let key = try read(path) { return key }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        let temporary = "\(path).\(RandomToken.hex(bytes: 8)).tmp"
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw problem(path, "it cannot be written (errno \(errno))") }
        defer { unlink(temporary) }
        let text = Array((RandomToken.hex(bytes: 32) + "\n").utf8)
        let written = text.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == text.count, synced else { throw problem(path, "it cannot be written") }
        // Two processes starting at once: the first file linked wins and both use it.
        if link(temporary, path) != 0, errno != EEXIST { throw problem(path, "it cannot be created (errno \(errno))") }
        guard let key = try read(path) else { throw problem(path, "it vanished while being created") }
        return key
    }

    private static func read(_ path: String) throws -> SymmetricKey? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { throw problem(path, "it cannot be read") }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64, let bytes = Hex.decode(text) else {
            throw problem(path, "it must hold 64 hex digits (32 random bytes); delete it to have a new one made")
        }
        return SymmetricKey(data: bytes)
    }

    private static func problem(_ path: String, _ reason: String) -> HeraldError {
        HeraldError(.invalidConfiguration, "tokens.mailKeyFile \(path): \(reason)")
    }
}

import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// Salted PBKDF2-HMAC-SHA256 password hashes: `pbkdf2-sha256$<rounds>$<salt>$<hash>` (base64url).
public enum PasswordHasher {
    static let rounds = 210_000  // the OWASP floor CryptoExtras enforces for PBKDF2-SHA256
    public static let minimumLength = 6

    public static func hash(_ password: String) throws -> String {
        let salt = ActionCode.generate().plaintext  // 32 random bytes, base64url
        return "pbkdf2-sha256$\(rounds)$\(salt)$\(try derive(password, salt: salt, rounds: rounds))"
    }

    static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let rounds = Int(parts[1]), rounds > 0,
            let derived = try? derive(password, salt: parts[2], rounds: rounds)
        else { return false }
        return Secret.equal(derived, parts[3])
    }

    /// Does the work of one verification against a fixed hash, so a missing account answers as slowly as a wrong password.
    static func spendVerificationTime(_ password: String) {
        _ = verify(password, against: dummy)
    }

    private static let dummy = (try? hash("herald-timing-equaliser")) ?? ""

    /// - Throws: `WEAK_PASSWORD` under six characters.
    public static func checkStrength(_ password: String) throws {
        if password.count < minimumLength {
            throw HeraldError(.weakPassword, "Password should be at least \(minimumLength) characters")
        }
    }

    private static func derive(_ password: String, salt: String, rounds: Int) throws -> String {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(password.utf8), salt: Array(salt.utf8), using: .sha256, outputByteCount: 32, rounds: rounds)
        return key.withUnsafeBytes { Base64URL.encode(Array($0)) }
    }
}

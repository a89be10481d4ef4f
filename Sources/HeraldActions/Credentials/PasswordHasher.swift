import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// Salted PBKDF2-HMAC-SHA256 password hashes: `pbkdf2-sha256$<rounds>$<salt>$<hash>` (base64url).
///
/// Also verifies the hashes imported from Firebase (`firebase-…`, see `ImportedPasswordHash`) until they are replaced.
public enum PasswordHasher {
    static let rounds = 210_000  // the OWASP floor CryptoExtras enforces for PBKDF2-SHA256
    public static let minimumLength = 6

    public static func hash(_ password: String) throws -> String {
        let salt = ActionCode.generate().plaintext  // 32 random bytes, base64url
        return "pbkdf2-sha256$\(rounds)$\(salt)$\(try derive(password, salt: salt, rounds: rounds))"
    }

    /// Whether `password` matches `stored`: one of Herald's own hashes, or an imported one (`ImportedPasswordHash`).
    static func verify(_ password: String, against stored: String) -> Bool {
        if stored.hasPrefix(ImportedPasswordHash.storedPrefix) { return verifyImported(password, against: stored) }
        guard let own = own(stored), let derived = try? derive(password, salt: own.salt, rounds: own.rounds) else { return false }
        return Secret.equal(derived, own.hash)
    }

    /// The fields of one of Herald's own hashes; nil for anything else.
    private static func own(_ stored: String) -> (rounds: Int, salt: String, hash: String)? {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let rounds = Int(parts[1]), rounds > 0 else { return nil }
        return (rounds, parts[2], parts[3])
    }

    /// Does the work of one verification against a fixed hash, so a missing account answers as slowly as a wrong password.
    static func spendVerificationTime(_ password: String) {
        _ = verify(password, against: dummy)
    }

    private static let dummy = (try? hash("herald-timing-equaliser")) ?? ""

    /// Whether `stored` should be replaced by `hash(_:)` of the password just verified: true for an imported hash,
    /// which Herald keeps only until the user's first successful sign-in.
    static func needsRehash(_ stored: String) -> Bool {
        stored.hasPrefix(ImportedPasswordHash.storedPrefix)
    }

    /// Checks an imported hash, then does PBKDF2 work (what Herald's own check does) for the part of one of Herald's
    /// own verifications that the imported check did not take, whether the password was right or not.
    ///
    /// A wrong password thus costs about one of Herald's verifications (as for a missing account) whatever the
    /// account's algorithm, unless that algorithm is itself slower (Firebase's scrypt, bcrypt at cost 11 and up):
    /// those answer in their own time.
    private static func verifyImported(_ password: String, against stored: String) -> Bool {
        let clock = ContinuousClock()
        let start = clock.now
        let matches = (try? ImportedPasswordHash(storedForm: stored))?.verify(password) ?? false
        let share = start.duration(to: clock.now) / ownVerificationTime
        if share < 1 {
            let padding = max(1, Int(Double(rounds) * (1 - share)))
            _ = try? KDF.Insecure.PBKDF2.deriveKey(
                from: Array(password.utf8), salt: Array("herald-timing-padding".utf8), using: .sha256, outputByteCount: 32,
                unsafeUncheckedRounds: padding)
        }
        return matches
    }

    /// How long one of Herald's own verifications takes here: the faster of two, timed once at first use.
    private static let ownVerificationTime: Duration = {
        let clock = ContinuousClock()
        let first = clock.measure { spendVerificationTime("herald-timing-probe") }
        return min(first, clock.measure { spendVerificationTime("herald-timing-probe") })
    }()

    /// One of Herald's own hashes as an export writes it: the derived key and the salt's bytes in standard base64, for
    /// `PBKDF2_SHA256` at `rounds`. Nil for an imported hash, or one of Herald's at other rounds.
    static func exportable(_ stored: String) -> (hash: String, salt: String)? {
        guard let own = own(stored), own.rounds == rounds, let key = Base64URL.decode(own.hash) else { return nil }
        return (Data(key).base64EncodedString(), Data(own.salt.utf8).base64EncodedString())
    }

    /// Whether `stored` is a password hash Herald can verify: one of its own at its rounds, or an imported one.
    static func isVerifiable(_ stored: String) -> Bool {
        if stored.hasPrefix(ImportedPasswordHash.storedPrefix) { return (try? ImportedPasswordHash(storedForm: stored)) != nil }
        return exportable(stored) != nil
    }

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

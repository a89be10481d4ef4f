import CCrypt
import HeraldCore

/// bcrypt through the system's crypt(3) (libxcrypt), for hashes imported from Firebase.
///
/// Only checks existing hashes: Herald never makes bcrypt hashes of its own.
enum Bcrypt {
    /// The highest cost accepted: each step doubles the work, and 2^14 rounds already take about a second.
    static let maximumCost = 14

    /// bcrypt of `password` under `setting` (a stored `$2a$`/`$2b$`/`$2y$` hash), as the bytes of its string.
    ///
    /// - Throws: when the password holds a NUL byte (crypt would stop there) or crypt refuses the setting.
    static func hash(_ password: [UInt8], setting: [UInt8]) throws -> [UInt8] {
        guard !password.contains(0) else { throw HeraldError(.invalidPassword, "a bcrypt password cannot hold a NUL byte") }
        var output = [CChar](repeating: 0, count: 128)
        let capacity = output.count
        let status = output.withUnsafeMutableBufferPointer { output in
            (password + [0]).withUnsafeBytes { phrase in
                (setting + [0]).withUnsafeBytes { setting in
                    let phrase = phrase.assumingMemoryBound(to: CChar.self).baseAddress
                    let setting = setting.assumingMemoryBound(to: CChar.self).baseAddress
                    return herald_crypt(phrase, setting, output.baseAddress, capacity)
                }
            }
        }
        guard status == 0 else { throw HeraldError(.invalidPasswordHash, "crypt refused the bcrypt hash") }
        return output.prefix { $0 != 0 }.map(UInt8.init(bitPattern:))
    }

    /// The cost of a well-formed bcrypt hash (`$2a$`, `$2b$` or `$2y$`, a two-digit cost, 53 characters of
    /// bcrypt's base64); nil for anything else.
    static func cost(_ hash: [UInt8]) -> Int? {
        let text = String(decoding: hash, as: UTF8.self)
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, ["2a", "2b", "2y"].contains(parts[1]), parts[2].count == 2,
            let cost = Int(parts[2]), (4...31).contains(cost), parts[3].count == 53,
            parts[3].utf8.allSatisfy({ bcryptAlphabet.contains($0) })
        else { return nil }
        return cost
    }

    private static let bcryptAlphabet = Set("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
}

import Crypto
import Foundation

/// A short code to type, mailed beside a link: the same ledger code spelled for a person's fingers.
///
/// Only its keyed hash (`TypedCodeKey.hash`) reaches the ledger: six digits hashed without a secret would fall to a
/// million guesses offline.
public struct TypedCode: Sendable, Hashable, CustomStringConvertible {
    /// The characters a code is made of.
    public enum Alphabet: String, Sendable, CaseIterable {
        /// 0–9.
        case digits
        /// Upper-case letters and digits without the ones read as others (0/O, 1/I/L, 2/Z, 5/S, 8/B, U/V):
        /// 23 symbols, typed in either case.
        case letters

        public var symbols: [Character] {
            switch self {
            case .digits: Array("0123456789")
            case .letters: Array("ACDEFGHJKMNPQRTWXY34679")
            }
        }
    }

    /// The code as mailed: `digits` or upper-case letters and digits, `length` of them.
    public let value: String

    public var description: String { value }

    /// A fresh code from the system CSPRNG, uniform over the alphabet (rejection sampling, no modulo bias).
    public static func generate(length: Int, alphabet: Alphabet) -> TypedCode {
        let symbols = alphabet.symbols
        let bound = UInt8(256 - 256 % symbols.count)
        var characters: [Character] = []
        characters.reserveCapacity(length)
        var generator = SystemRandomNumberGenerator()
        while characters.count < length {
            let byte = UInt8.random(in: 0...255, using: &generator)
            if byte < bound { characters.append(symbols[Int(byte) % symbols.count]) }
        }
        return TypedCode(value: String(characters))
    }

    /// What a person typed, as a code: spaces and dashes dropped, letters upper-cased; nil when nothing is left
    /// or it is longer than any code (so a pasted paragraph is not hashed).
    public static func normalized(_ typed: String) -> String? {
        let kept = typed.uppercased().filter { !$0.isWhitespace && $0 != "-" }
        guard !kept.isEmpty, kept.count <= 16 else { return nil }
        return String(kept)
    }

    init(value: String) { self.value = value }
}

/// The key typed codes are hashed under (`tokens.mailKeyFile`): the worker that mails a code and the server that
/// checks it share it, as they share the unsubscribe tokens'.
public struct TypedCodeKey: Sendable {
    private let key: SymmetricKey

    public init(key: SymmetricKey) { self.key = key }

    /// HMAC-SHA256 of the code, bound to the ledger code it belongs to (`codeKey`, its `ledgerKey`): equal codes of
    /// two messages hash apart.
    public func hash(_ code: String, codeKey: [UInt8]) -> [UInt8] {
        var input = Data("herald-typed-code:".utf8)
        input.append(contentsOf: codeKey)
        input.append(0)
        input.append(contentsOf: Array(code.utf8))
        return Array(HMAC<SHA256>.authenticationCode(for: input, using: key))
    }

    /// Whether `typed` (as a person typed it) is the code whose hash the ledger holds; constant time in the hash.
    public func matches(_ typed: String, stored: [UInt8], codeKey: [UInt8]) -> Bool {
        guard let code = TypedCode.normalized(typed) else { return false }
        return Secret.equal(hash(code, codeKey: codeKey), stored)
    }
}

import Crypto
import Foundation
import Synchronization

/// A one-time secret: 32 bytes from the system CSPRNG, base64url without padding (`generate()`); an action code
/// for the ledger has an increasing 8-byte key in front (`generateForLedger()`).
///
/// Only `ledgerKey` (codes) or `hash` (other secrets) is ever stored; the plaintext lives in the email (or an admin
/// response).
public struct ActionCode: Sendable {
    public let plaintext: String

    /// Generates a fresh code from the system CSPRNG in one call (`arc4random_buf`: glibc ≥ 2.36 reads all
    /// 32 bytes with one `getrandom`, where `SystemRandomNumberGenerator` makes one per 8 bytes and
    /// swift-crypto's `SymmetricKey` several per key — measured with `strace -c`).
    public static func generate() -> ActionCode {
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        return ActionCode(plaintext: Base64URL.encode(bytes))
    }

    public init(plaintext: String) { self.plaintext = plaintext }

    /// SHA-256 of the code's UTF-8 bytes (what the ledger stores for a refresh token; for an action code, `ledgerKey`).
    public var hash: [UInt8] { Self.hash(plaintext) }

    public static func hash(_ plaintext: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(plaintext.utf8)))
    }

    /// A code for the ledger: an 8-byte key that only increases (microseconds since 1970, or one more than the
    /// last key when the clock has not moved on), then 32 bytes from the CSPRNG; base64url, 54 characters.
    ///
    /// The key is not secret. It puts each new code's `ledgerKey` at the end of the ledger's unique index on
    /// `code_hash` instead of at a random place in it: a claim's forty codes then touch one index page, not forty.
    public static func generateForLedger() -> ActionCode {
        let key = nextKey()
        var bytes = [UInt8](repeating: 0, count: 40)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: key >> (56 - 8 * UInt64(index))) }
        bytes.withUnsafeMutableBytes { arc4random_buf($0.baseAddress! + 8, 32) }
        return ActionCode(plaintext: Base64URL.encode(bytes))
    }

    /// What the ledger stores for this code and finds it by (`ledgerKey(_:)`).
    public var ledgerKey: [UInt8] { Self.ledgerKey(plaintext) }

    /// What the ledger stores for `plaintext` and finds it by: for a keyed code (54 characters whose first 11
    /// decode), its 8-byte key followed by the code's SHA-256; for anything else, such as a code made before keys
    /// (43 characters), the SHA-256 alone. The secret 32 bytes never reach the ledger.
    public static func ledgerKey(_ plaintext: String) -> [UInt8] {
        let digest = hash(plaintext)
        guard let key = key(plaintext) else { return digest }
        var out = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { out[index] = UInt8(truncatingIfNeeded: key >> (56 - 8 * UInt64(index))) }
        return out + digest
    }

    /// The key (microseconds since 1970) at the front of a stored `ledgerKey(_:)`; nil for one without a key (the
    /// SHA-256 alone).
    public static func key(ofLedgerKey stored: some Collection<UInt8>) -> UInt64? {
        guard stored.count == 40 else { return nil }
        return stored.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// When a keyed code was made, from its key (microseconds since 1970); nil for a code without a key. Anyone can
    /// write a code with any key: this says when the code claims it was made, not that it exists.
    public static func claimedCreation(_ plaintext: String) -> Date? {
        key(plaintext).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    /// The 8-byte key of a keyed code (54 characters whose first 11 decode); nil for anything else.
    private static func key(_ plaintext: String) -> UInt64? {
        let utf8 = plaintext.utf8
        guard utf8.count == keyedLength else { return nil }
        // The key is the first 64 of the 66 bits in the first 11 characters: ten whole ones, then the eleventh's top
        // four (its last two belong to the random part).
        var key: UInt64 = 0
        for (index, character) in utf8.prefix(11).enumerated() {
            guard let value = Base64URL.value(character) else { return nil }
            key = index < 10 ? key << 6 | UInt64(value) : key << 4 | UInt64(value >> 2)
        }
        return key
    }

    /// The length of a keyed code: 40 bytes in unpadded base64url.
    static let keyedLength = 54

    private static let lastKey = Atomic<UInt64>(0)

    private static func nextKey() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let now = UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec / 1000)
        var last = lastKey.load(ordering: .relaxed)
        while true {
            let next = max(now, last + 1)
            let (exchanged, original) = lastKey.compareExchange(expected: last, desired: next, ordering: .relaxed)
            if exchanged { return next }
            last = original
        }
    }
}

/// Unpadded base64url (RFC 4648 §5).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Unpadded base64url (RFC 4648 §5).
    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let left = bytes.count - index
        if left > 0 {
            let value = UInt32(bytes[index]) << 16 | (left == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if left == 2 { out.append(alphabet[Int(value >> 6 & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The 6-bit value of one base64url character; nil for any other byte.
    static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case 65...90: character - 65
        case 97...122: character - 71
        case 48...57: character + 4
        case 45: 62
        case 95: 63
        default: nil
        }
    }

    /// The bytes of base64url text, padded or not; nil when it is not base64url.
    public static func decode(_ text: some StringProtocol) -> Data? {
        // Byte by byte: Foundation's replacingOccurrences was a tenth of a Firebase user import's time.
        var base64 = text.utf8.map { $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0 }
        base64 += repeatElement(UInt8(ascii: "="), count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: Data(base64))
    }
}

/// Lower-case hex digests.
public enum Hex {
    /// The SHA-256 of `text`'s UTF-8, in lower-case hex (Apple's hashed nonce, the SDKs' hashed session id).
    public static func sha256(_ text: String) -> String { sha256(Data(text.utf8)) }

    public static func sha256(_ data: Data) -> String {
        encode(SHA256.hash(data: data))
    }

    /// The bytes of an even-length hex string (either case); nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 48...57: digit - 48
            case 97...102: digit - 87
            case 65...70: digit - 55
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// Lower-case hex of `bytes` (`String(format:)` per byte cost a microsecond each).
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let digits = Array("0123456789abcdef".utf8)
}

/// Random identifiers that are not secrets (Message-IDs, boundaries).
public enum RandomToken {
    public static func hex(bytes count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        var word: UInt64 = 0
        for index in 0..<count {
            if index % 8 == 0 { word = generator.next() }  // one system call per 8 bytes
            let byte = UInt8(truncatingIfNeeded: word >> (8 * UInt64(index % 8)))
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Message-IDs that are unique and increase within a process: `<{random process prefix}.{counter}.herald@domain>`.
///
/// Increasing keys append to the ledger's unique index instead of landing at random places in it,
/// which keeps million-row imports fast.
public enum MessageID {
    private static let prefix = RandomToken.hex(bytes: 8)
    private static let counter = Atomic<UInt64>(0)

    /// Base-36 digits of `UInt64.max`: every counter is padded to this width so the text sorts as the number does.
    static let counterWidth = 13
    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    public static func next(domain: String) -> String {
        Maker(domain: domain).next()
    }

    /// `<{prefix}.`: the same for every Message-ID of the process.
    private static let head = Array("<\(prefix).".utf8)

    /// Message-IDs for one domain, with the parts that do not change formatted once (an import makes a
    /// million of them on its writer thread).
    public struct Maker: Sendable {
        private let tail: [UInt8]

        public init(domain: String) {
            tail = Array(".herald@\(domain)>".utf8)
        }

        public func next() -> String {
            var (value, _) = counter.add(1, ordering: .relaxed)
            return String(unsafeUninitializedCapacity: head.count + counterWidth + tail.count) { buffer in
                var end = buffer.initialize(fromContentsOf: head)
                end += counterWidth
                for index in stride(from: end - 1, through: end - counterWidth, by: -1) {
                    buffer[index] = digits[Int(value % 36)]
                    value /= 36
                }
                return buffer[end...].initialize(fromContentsOf: tail)
            }
        }
    }
}

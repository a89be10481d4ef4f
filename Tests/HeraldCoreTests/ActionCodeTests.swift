import Crypto
import Foundation
import HeraldCore
import Testing

@Suite struct ActionCodeTests {
    @Test func codeIs32RandomBytesInBase64URL() {
        let code = ActionCode.generate().plaintext
        #expect(code.count == 43)
        #expect(code.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
    }

    @Test func codesDoNotRepeat() {
        let codes = Set((0..<10_000).map { _ in ActionCode.generate().plaintext })
        #expect(codes.count == 10_000)
    }

    @Test func hashIsSHA256OfTheCode() {
        let code = ActionCode(plaintext: "abc")
        #expect(code.hash == Array(SHA256.hash(data: Array("abc".utf8))))
        #expect(code.hash.count == 32)
    }

    @Test func ledgerCodesAreAnIncreasingKeyAndThirtyTwoRandomBytes() throws {
        let before = UInt64(Date().timeIntervalSince1970 * 1_000_000)
        var keys: [UInt64] = []
        var seen = Set<UInt8>()
        for _ in 0..<2_000 {
            let code = ActionCode.generateForLedger().plaintext
            #expect(code.count == 54)
            let bytes = try #require(Base64URL.decode(code))
            #expect(bytes.count == 40)
            keys.append(bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
            seen.formUnion(bytes.dropFirst(8))
        }
        #expect(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }, "each key is larger than the last, even within a microsecond")
        #expect(keys[0] >= before && keys[0] < before + 60_000_000, "the key starts from the clock's microseconds")
        #expect(seen.count == 256, "the last 32 bytes come from the CSPRNG")
    }

    @Test func theLedgerKeepsAKeyedCodesKeyThenItsSHA256AndAnyOtherCodesSHA256Alone() throws {
        let code = ActionCode.generateForLedger()
        let bytes = try #require(Base64URL.decode(code.plaintext))
        #expect(code.ledgerKey == Array(bytes.prefix(8)) + Array(SHA256.hash(data: Array(code.plaintext.utf8))))
        #expect(ActionCode.ledgerKey(code.plaintext) == code.ledgerKey)
        // Every bit of the key is read back, the first character's top two included.
        for key in [[UInt8](repeating: 0xFF, count: 8), [0x80, 0, 0, 0, 0, 0, 0, 1], [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]] {
            let text = Base64URL.encode(key + [UInt8](repeating: 0x5A, count: 32))
            #expect(ActionCode.ledgerKey(text) == key + ActionCode.hash(text), "\(key)")
        }
        // A code from before keys (43 characters) and text that is no code are looked up by their SHA-256 alone.
        let legacy = ActionCode.generate().plaintext
        #expect(ActionCode.ledgerKey(legacy) == ActionCode.hash(legacy))
        let notBase64 = String(repeating: "*", count: 54)
        #expect(ActionCode.ledgerKey(notBase64) == ActionCode.hash(notBase64))
        #expect(ActionCode.ledgerKey("") == ActionCode.hash(""))
        // Changing one character of the secret part changes the hash, not the key.
        var altered = Array(code.plaintext)
        altered[40] = altered[40] == "A" ? "B" : "A"
        let alteredKey = ActionCode.ledgerKey(String(altered))
        #expect(alteredKey.prefix(8) == code.ledgerKey.prefix(8))
        #expect(alteredKey != code.ledgerKey)
    }

    @Test func base64URLHasNoPaddingOrUnsafeCharacters() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([]) == "")
    }

    @Test func base64URLMatchesFoundationsBase64ForEveryLengthAndRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected, "\(length) bytes")
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == Data(bytes), "\(length) bytes")
        }
    }

    @Test func codesUseEveryByteValueFromTheCSPRNG() throws {
        // 2,000 codes are 64,000 random bytes: every byte value appears (a stuck generator would not), every code
        // has 32 bytes, and none repeats.
        var seen = Set<UInt8>()
        var codes = Set<String>()
        for _ in 0..<2_000 {
            let code = ActionCode.generate().plaintext
            let bytes = try #require(Base64URL.decode(code))
            #expect(bytes.count == 32)
            // A short fill would leave the last bytes as they were (zero) in every code.
            #expect(bytes.suffix(8) != Data(repeating: 0, count: 8))
            seen.formUnion(bytes)
            codes.insert(code)
        }
        #expect(seen.count == 256)
        #expect(codes.count == 2_000)
    }

    @Test func messageIDsAreUniqueAndSortAsTheyAreMade() throws {
        let ids = (0..<2000).map { _ in MessageID.next(domain: "mail.example") }
        #expect(Set(ids).count == ids.count)
        #expect(ids.sorted() == ids)
        let pattern = try Regex("^<[0-9a-f]{16}\\.[0-9a-z]{13}\\.herald@mail\\.example>$")
        #expect(ids.allSatisfy { $0.wholeMatch(of: pattern) != nil })
    }
}

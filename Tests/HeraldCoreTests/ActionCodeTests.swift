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

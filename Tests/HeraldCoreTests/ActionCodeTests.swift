import Crypto
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
}

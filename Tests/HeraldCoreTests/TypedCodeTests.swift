import Crypto
import HeraldCore
import Testing

@Suite struct TypedCodeTests {
    @Test(arguments: [(6, TypedCode.Alphabet.digits), (10, .digits), (8, .letters)])
    func codesHaveTheirLengthAndOnlyTheirAlphabet(_ length: Int, _ alphabet: TypedCode.Alphabet) {
        for _ in 0..<200 {
            let code = TypedCode.generate(length: length, alphabet: alphabet)
            #expect(code.value.count == length)
            #expect(code.value.allSatisfy { alphabet.symbols.contains($0) })
        }
    }

    @Test func everySymbolComesUpAndNoneMuchMoreThanItsShare() {
        var counts: [Character: Int] = [:]
        for _ in 0..<2_000 { for character in TypedCode.generate(length: 10, alphabet: .digits).value { counts[character, default: 0] += 1 } }
        #expect(counts.count == 10)
        // 20,000 draws of 10 symbols: 2,000 each expected; a biased generator (modulo bias of 256 % 10) stays in too,
        // but a broken one (a constant, a missing symbol) does not.
        #expect(counts.values.allSatisfy { (1_700...2_300).contains($0) }, "\(counts)")
    }

    @Test func lettersLeaveOutTheSymbolsPeopleMisread() {
        let symbols = Set(TypedCode.Alphabet.letters.symbols)
        #expect(symbols.count == 23)
        for confusable in "01258BILOSUVZ" { #expect(!symbols.contains(confusable), "\(confusable)") }
    }

    @Test func typedTextIsNormalizedBeforeItIsCompared() {
        #expect(TypedCode.normalized(" 482-913 ") == "482913")
        #expect(TypedCode.normalized("ac d3") == "ACD3")
        #expect(TypedCode.normalized("  ") == nil)
        #expect(TypedCode.normalized(String(repeating: "1", count: 17)) == nil)
    }

    @Test func theHashIsKeyedAndBoundToItsLedgerCode() {
        let key = TypedCodeKey(key: SymmetricKey(size: .bits256))
        let other = TypedCodeKey(key: SymmetricKey(size: .bits256))
        let codeKey: [UInt8] = Array(repeating: 7, count: 40)
        let stored = key.hash("482913", codeKey: codeKey)
        #expect(stored.count == 32)
        #expect(key.matches("482 913", stored: stored, codeKey: codeKey))
        #expect(!key.matches("482914", stored: stored, codeKey: codeKey))
        #expect(!key.matches("482913", stored: stored, codeKey: Array(repeating: 8, count: 40)))
        #expect(!other.matches("482913", stored: stored, codeKey: codeKey))
        #expect(!key.matches("", stored: stored, codeKey: codeKey))
    }

    @Test func thePolicySaysWhichMailCarriesACodeAndARequestMayOverrideIt() {
        typealias Policy = HeraldConfiguration.Policy.TypedCodes
        #expect(TypedCodeRequest.carries(.signIn, request: nil, policy: .signIn))
        #expect(!TypedCodeRequest.carries(.verifyEmail, request: nil, policy: .signIn))
        #expect(TypedCodeRequest.carries(.verifyEmail, request: TypedCodeRequest(wanted: true), policy: .signIn))
        #expect(!TypedCodeRequest.carries(.signIn, request: TypedCodeRequest(wanted: false), policy: .all))
        #expect(!TypedCodeRequest.carries(.signIn, request: nil, policy: .request))
        #expect(TypedCodeRequest.carries(.resetPassword, request: TypedCodeRequest(wanted: true), policy: .request))
        #expect(!TypedCodeRequest.carries(.signIn, request: TypedCodeRequest(wanted: true), policy: .off))
        #expect(!TypedCodeRequest.carries(.recoverEmail, request: TypedCodeRequest(wanted: true), policy: .all))
        #expect(TypedCodeRequest.carries(.verifyAndChangeEmail, request: nil, policy: .all))
    }
}

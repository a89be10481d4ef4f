import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

@Suite struct ImportedPasswordHashTests {
    /// One user of Fixtures/imported-hash-vectors.json, made by Tests/support/make_hash_vectors.py.
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let password: String
        let parameters: ImportedPasswordHash.Parameters
        let passwordHash: String
        let salt: String?
        let source: String
        var testDescription: String { name }

        func imported() throws -> ImportedPasswordHash {
            try ImportedPasswordHash(ImportedPasswordHash.Scheme(parameters), passwordHash: passwordHash, salt: salt)
        }
    }

    static let vectors: [Vector] = {
        let url = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Fixtures/imported-hash-vectors.json")
        return (try? JSONDecoder().decode([Vector].self, from: Data(contentsOf: url))) ?? []
    }()

    static func vector(_ name: String) throws -> Vector {
        try #require(vectors.first { $0.name == name })
    }

    @Test func theFixtureCoversEveryAlgorithmFirebaseImports() {
        let algorithms = Set(Self.vectors.compactMap(\.parameters.hashAlgorithm))
        #expect(
            algorithms == [
                "SCRYPT", "STANDARD_SCRYPT", "BCRYPT", "PBKDF_SHA1", "PBKDF2_SHA256", "HMAC_SHA512", "HMAC_SHA256", "HMAC_SHA1",
                "HMAC_MD5", "SHA512", "SHA256", "SHA1", "MD5",
            ])
    }

    @Test(arguments: ImportedPasswordHashTests.vectors)
    func independentVectorsVerifyTheirPasswordAndNoOther(_ vector: Vector) throws {
        let imported = try vector.imported()
        #expect(imported.verify(vector.password))
        let lastChanged = String(vector.password.dropLast()) + (vector.password.hasSuffix("!") ? "?" : "!")
        #expect(!imported.verify(lastChanged))
        #expect(try ImportedPasswordHash(storedForm: imported.storedForm) == imported)
    }

    @Test func bcryptReadsOnlyTheFirst72BytesAndRefusesANULByte() throws {
        let long = try Self.vector("bcrypt $2b$ cost 4, 72-byte password").imported()
        #expect(long.verify(String(repeating: "x", count: 72) + "ignored"))
        let short = try Self.vector("bcrypt $2b$ cost 4, 13-byte password").imported()
        #expect(!short.verify("correct horse\u{0}tail"))  // crypt would stop at the NUL and see the right password
    }

    @Test func storedFormsNameTheAlgorithmAndKeepEveryField() throws {
        let hmac = try Self.vector("HMAC_SHA256 PASSWORD_AND_SALT").imported()
        let key = Base64URL.encode(Array("herald hmac signer key".utf8))
        let salt = Base64URL.encode(Array("herald-salt-1".utf8))
        #expect(hmac.storedForm == "firebase-hmac-sha256$PASSWORD_AND_SALT$\(key)$\(salt)$\(Base64URL.encode(hmac.hash))")
        let scrypt = try Self.vector("firebase scrypt, the firebase/scrypt README").imported().storedForm
        let readmeKey = "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA"
        #expect(scrypt.hasPrefix("firebase-scrypt$8$14$\(readmeKey)$Bw$"))
        let standard = try Self.vector("standard scrypt, RFC 7914").imported().storedForm
        #expect(standard.hasPrefix("firebase-standard-scrypt$1024$8$16$64$TmFDbA$"))
        let bcrypt = try Self.vector("bcrypt $2y$ (PHP's name for $2b$)").imported().storedForm
        #expect(bcrypt.hasPrefix("firebase-bcrypt$$JDJ5JDA0J"))
        let digest = try Self.vector("MD5 rounds 0 (read as one hash)").imported().storedForm
        #expect(digest.hasPrefix("firebase-md5$0$SALT_AND_PASSWORD$\(salt)$"))
    }

    @Test func malformedOrOutOfBoundsStoredFormsAreRefused() throws {
        let good = try Self.vector("SHA256 rounds 1 default order").imported().storedForm
        let fields = good.split(separator: "$").map(String.init)
        let malformed = [
            fields.dropLast().joined(separator: "$"), good + "$AAAA", "pbkdf2-sha256$1$a$b",
            "firebase-sha256$one$SALT_AND_PASSWORD$$AA", "firebase-$$", "firebase-bcrypt$",
        ]
        for stored in malformed {
            let error = #expect(throws: HeraldError.self, "\(stored)") { try ImportedPasswordHash(storedForm: stored) }
            #expect(error?.code == .invalidPasswordHash || error?.code == .invalidHashAlgorithm, "\(stored)")
        }
        let tooCostly = good.replacingOccurrences(of: "firebase-sha256$1$", with: "firebase-sha256$9000$")
        #expect(throws: HeraldError(.invalidHashRounds, "rounds must be from 1 to 8192 for hash algorithm SHA256")) {
            try ImportedPasswordHash(storedForm: tooCostly)
        }
    }

    @Test func passwordHasherVerifiesImportedHashesBesideItsOwnAndAsksForTheirReplacement() throws {
        let vector = try Self.vector("SHA1 PASSWORD_AND_SALT, a Firebase import shown to work")
        let stored = try vector.imported().storedForm
        #expect(PasswordHasher.verify("Password1", against: stored))
        #expect(!PasswordHasher.verify("Password2", against: stored))
        #expect(!PasswordHasher.verify("Password1", against: "firebase-sha1$1$PASSWORD_AND_SALT$$AAAA"))
        #expect(PasswordHasher.needsRehash(stored))
        #expect(!PasswordHasher.needsRehash(try PasswordHasher.hash("Password1")))
    }

    @Test func batchParametersOutsideFirebasesRangesOrHeraldsBoundsAreRefusedWithFirebasesCodes() {
        typealias Parameters = ImportedPasswordHash.Parameters
        let key = "c2lnbmVyLWtleQ"
        let cases: [(Parameters, HeraldError.Code)] = [
            (Parameters(), .missingHashAlgorithm),
            (Parameters(hashAlgorithm: "ARGON2"), .invalidHashAlgorithm),
            (Parameters(hashAlgorithm: "SHA3"), .invalidHashAlgorithm),
            (Parameters(hashAlgorithm: "SCRYPT", rounds: 8, memoryCost: 14), .invalidHashKey),
            (Parameters(hashAlgorithm: "SCRYPT", signerKey: "not base64!", rounds: 8, memoryCost: 14), .invalidHashKey),
            (Parameters(hashAlgorithm: "SCRYPT", signerKey: key, saltSeparator: "%", rounds: 8, memoryCost: 9), .invalidHashSaltSeparator),
            (Parameters(hashAlgorithm: "SCRYPT", signerKey: key, rounds: 9, memoryCost: 14), .invalidHashRounds),
            (Parameters(hashAlgorithm: "SCRYPT", signerKey: key, rounds: 8, memoryCost: 15), .invalidHashMemoryCost),
            (Parameters(hashAlgorithm: "SCRYPT", signerKey: key, rounds: 8), .invalidHashMemoryCost),
            (Self.standard(cpuMemCost: 1000), .invalidHashMemoryCost),
            (Self.standard(cpuMemCost: 1 << 16, blockSize: 1), .invalidHashMemoryCost),
            (Self.standard(cpuMemCost: 1 << 20, blockSize: 2), .invalidHashMemoryCost),
            (Self.standard(cpuMemCost: 1 << 17, parallelization: 2), .invalidHashMemoryCost),
            (Self.standard(blockSize: 0), .invalidHashBlockSize),
            (Self.standard(blockSize: 17), .invalidHashBlockSize),
            (Self.standard(parallelization: 0), .invalidHashParallelization),
            (Self.standard(dkLen: 0), .invalidHashDerivedKeyLength),
            (Self.standard(dkLen: 129), .invalidHashDerivedKeyLength),
            (Parameters(hashAlgorithm: "PBKDF2_SHA256", rounds: 210_001), .invalidHashRounds),
            (Parameters(hashAlgorithm: "PBKDF_SHA1", rounds: -1), .invalidHashRounds),
            (Parameters(hashAlgorithm: "SHA256"), .invalidHashRounds),
            (Parameters(hashAlgorithm: "SHA1", rounds: 8193), .invalidHashRounds),
            (Parameters(hashAlgorithm: "MD5", rounds: 8193), .invalidHashRounds),
            (Parameters(hashAlgorithm: "HMAC_SHA512"), .invalidHashKey),
            (Parameters(hashAlgorithm: "SHA512", rounds: 1, passwordHashOrder: "BOTH"), .invalidArgument),
        ]
        for (parameters, code) in cases {
            let error = #expect(throws: HeraldError.self, "\(parameters)") { try ImportedPasswordHash.Scheme(parameters) }
            #expect(error?.code == code, "\(parameters)")
        }
        #expect(throws: HeraldError(.invalidHashRounds, "rounds must be from 1 to 8 for hash algorithm SCRYPT")) {
            try ImportedPasswordHash.Scheme(Parameters(hashAlgorithm: "SCRYPT", signerKey: key, rounds: 0, memoryCost: 14))
        }
        #expect((try? ImportedPasswordHash.Scheme(Self.standard(cpuMemCost: 1 << 17))) != nil)
        #expect((try? ImportedPasswordHash.Scheme(Self.standard(cpuMemCost: 1 << 19, blockSize: 2))) != nil)
    }

    @Test func usersWhoseHashOrSaltTheSchemeCannotHaveMadeAreRefused() throws {
        let sha256 = try ImportedPasswordHash.Scheme(.init(hashAlgorithm: "SHA256", rounds: 1))
        let bcrypt = ImportedPasswordHash.Scheme.bcrypt
        let standard = try ImportedPasswordHash.Scheme(Self.standard(dkLen: 32))
        let hash32 = Base64URL.encode([UInt8](repeating: 7, count: 32))
        let costly = Base64URL.encode(Array("$2b$15$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234".utf8))
        let cases: [(ImportedPasswordHash.Scheme, String, String?, HeraldError.Code)] = [
            (sha256, "not base64!", nil, .invalidPasswordHash),
            (sha256, hash32, "not base64!", .invalidPasswordSalt),
            (sha256, hash32, Base64URL.encode([UInt8](repeating: 1, count: 257)), .invalidPasswordSalt),
            (sha256, Base64URL.encode([UInt8](repeating: 7, count: 20)), nil, .invalidPasswordHash),
            (sha256, "", nil, .invalidPasswordHash),
            (bcrypt, hash32, nil, .invalidPasswordHash),
            (bcrypt, costly, nil, .invalidPasswordHash),
            (standard, Base64URL.encode([UInt8](repeating: 7, count: 64)), nil, .invalidPasswordHash),
        ]
        for (scheme, hash, salt, code) in cases {
            let error = #expect(throws: HeraldError.self, "\(scheme) \(hash)") {
                try ImportedPasswordHash(scheme, passwordHash: hash, salt: salt)
            }
            #expect(error?.code == code, "\(scheme) \(hash)")
        }
    }

    /// Prints how long a wrong password takes for each imported algorithm, bare and through `PasswordHasher` (which
    /// pads), beside Herald's own hash and a missing account. Asserts nothing, as timings follow the machine's load;
    /// runs only when asked: `HERALD_TIMING=1 swift test --filter wrongPasswordTimings`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HERALD_TIMING"] != nil))
    func wrongPasswordTimings() throws {
        let clock = ContinuousClock()
        func median(_ body: () -> Void) -> String {
            let runs = (0..<7).map { _ in clock.measure(body) }.sorted()
            let (seconds, attoseconds) = runs[3].components
            return String(format: "%7.1f ms", Double(seconds) * 1e3 + Double(attoseconds) / 1e15)
        }
        let own = try PasswordHasher.hash("correct horse")
        print("Herald's own hash  \(median { _ = PasswordHasher.verify("wrong horse", against: own) })")
        print("missing account    \(median { PasswordHasher.spendVerificationTime("wrong horse") })")
        var seen = Set<String>()
        for vector in Self.vectors where seen.insert(vector.parameters.hashAlgorithm ?? "").inserted {
            let imported = try vector.imported()
            let bare = median { _ = imported.verify("wrong horse") }
            let padded = median { _ = PasswordHasher.verify("wrong horse", against: imported.storedForm) }
            print("\(vector.name.padding(toLength: 45, withPad: " ", startingAt: 0)) bare \(bare)  padded \(padded)")
        }
    }

    static func standard(cpuMemCost: Int = 1024, blockSize: Int = 8, parallelization: Int = 1, dkLen: Int = 64)
        -> ImportedPasswordHash.Parameters
    {
        ImportedPasswordHash.Parameters(
            hashAlgorithm: "STANDARD_SCRYPT", cpuMemCost: cpuMemCost, parallelization: parallelization, blockSize: blockSize,
            dkLen: dkLen)
    }
}

import Foundation
import HeraldCore

extension ImportedPasswordHash {
    /// The hash fields of one `accounts:batchCreate` request, as the request carries them (keys as in the REST API,
    /// byte fields in base64url or standard base64).
    public struct Parameters: Hashable, Sendable, Codable {
        public var hashAlgorithm: String?
        public var signerKey: String?
        public var saltSeparator: String?
        public var rounds: Int?
        public var memoryCost: Int?
        public var cpuMemCost: Int?
        public var parallelization: Int?
        public var blockSize: Int?
        public var dkLen: Int?
        public var passwordHashOrder: String?

        public init(
            hashAlgorithm: String? = nil, signerKey: String? = nil, saltSeparator: String? = nil, rounds: Int? = nil,
            memoryCost: Int? = nil, cpuMemCost: Int? = nil, parallelization: Int? = nil, blockSize: Int? = nil,
            dkLen: Int? = nil, passwordHashOrder: String? = nil
        ) {
            self.hashAlgorithm = hashAlgorithm
            self.signerKey = signerKey
            self.saltSeparator = saltSeparator
            self.rounds = rounds
            self.memoryCost = memoryCost
            self.cpuMemCost = cpuMemCost
            self.parallelization = parallelization
            self.blockSize = blockSize
            self.dkLen = dkLen
            self.passwordHashOrder = passwordHashOrder
        }
    }

    /// One imported user's hash: `passwordHash` and `salt` as the request carries them, under the batch's scheme.
    ///
    /// - Throws: `INVALID_PASSWORD_HASH` / `INVALID_PASSWORD_SALT` when either is not base64 or cannot have come from
    ///   the scheme (a SHA256 hash that is not 32 bytes, a bcrypt string that is not one).
    public init(_ scheme: Scheme, passwordHash: String, salt: String?) throws {
        guard let hash = Base64URL.decode(passwordHash) else {
            throw HeraldError(.invalidPasswordHash, "passwordHash must be base64")
        }
        guard let salt = Base64URL.decode(salt ?? "") else { throw HeraldError(.invalidPasswordSalt, "salt must be base64") }
        try self.init(scheme: scheme, hash: Array(hash), salt: Array(salt))
    }

    /// Bounds on what one user's fields may hold: generous for real hashes, and they cap the work of a verification.
    static let maximumHashBytes = 128
    static let maximumSaltBytes = 256
    static let maximumKeyBytes = 256
}

extension ImportedPasswordHash.Scheme {
    /// The scheme a batch's hash fields describe, checked against Firebase's ranges and Herald's bounds.
    ///
    /// Fields an algorithm does not use are ignored (as `saltSeparator` is for all but `SCRYPT`).
    /// - Throws: `MISSING_HASH_ALGORITHM`, `INVALID_HASH_ALGORITHM` (also for `ARGON2`, which Herald cannot check),
    ///   `INVALID_HASH_KEY`, `INVALID_HASH_SALT_SEPARATOR`, `INVALID_HASH_ROUNDS`, `INVALID_HASH_MEMORY_COST`,
    ///   `INVALID_HASH_BLOCK_SIZE`, `INVALID_HASH_PARALLELIZATION`, `INVALID_HASH_DERIVED_KEY_LENGTH`, and
    ///   `INVALID_ARGUMENT` for an unknown `passwordHashOrder`.
    public init(_ parameters: ImportedPasswordHash.Parameters) throws {
        guard let name = parameters.hashAlgorithm, !name.isEmpty else {
            throw HeraldError(.missingHashAlgorithm, "hashAlgorithm is required to import password hashes")
        }
        let rounds = parameters.rounds ?? 0
        switch name.uppercased() {
        case "SCRYPT":
            self = .firebaseScrypt(
                signerKey: try Self.signerKey(parameters), saltSeparator: try Self.saltSeparator(parameters), rounds: rounds,
                memoryCost: parameters.memoryCost ?? 0)
        case "STANDARD_SCRYPT":
            self = .standardScrypt(
                cpuMemCost: parameters.cpuMemCost ?? 0, blockSize: parameters.blockSize ?? 0,
                parallelization: parameters.parallelization ?? 0, dkLen: parameters.dkLen ?? 0)
        case "BCRYPT": self = .bcrypt
        case "PBKDF_SHA1": self = .pbkdf2(.sha1, rounds: rounds)
        case "PBKDF2_SHA256": self = .pbkdf2(.sha256, rounds: rounds)
        case "HMAC_SHA512": self = .hmac(.sha512, key: try Self.signerKey(parameters), order: try Self.order(parameters))
        case "HMAC_SHA256": self = .hmac(.sha256, key: try Self.signerKey(parameters), order: try Self.order(parameters))
        case "HMAC_SHA1": self = .hmac(.sha1, key: try Self.signerKey(parameters), order: try Self.order(parameters))
        case "HMAC_MD5": self = .hmac(.md5, key: try Self.signerKey(parameters), order: try Self.order(parameters))
        case "SHA512": self = .digest(.sha512, rounds: rounds, order: try Self.order(parameters))
        case "SHA256": self = .digest(.sha256, rounds: rounds, order: try Self.order(parameters))
        case "SHA1": self = .digest(.sha1, rounds: rounds, order: try Self.order(parameters))
        case "MD5": self = .digest(.md5, rounds: rounds, order: try Self.order(parameters))
        default: throw HeraldError(.invalidHashAlgorithm, "Unsupported hash algorithm \(name)")
        }
        try validate()
    }

    /// Firebase's name for the algorithm (`hashAlgorithm`).
    public var algorithm: String {
        switch self {
        case .firebaseScrypt: "SCRYPT"
        case .standardScrypt: "STANDARD_SCRYPT"
        case .bcrypt: "BCRYPT"
        case .pbkdf2(let digest, _): digest == .sha1 ? "PBKDF_SHA1" : "PBKDF2_\(digest.rawValue.uppercased())"
        case .hmac(let digest, _, _): "HMAC_\(digest.rawValue.uppercased())"
        case .digest(let digest, _, _): digest.rawValue.uppercased()
        }
    }

    /// The length every hash of this scheme has; nil where it is the hash that decides (PBKDF2, bcrypt).
    var hashByteCount: Int? {
        switch self {
        case .firebaseScrypt(let signerKey, _, _, _): signerKey.count
        case .standardScrypt(_, _, _, let dkLen): dkLen
        case .bcrypt, .pbkdf2: nil
        case .hmac(let digest, _, _), .digest(let digest, _, _): digest.byteCount
        }
    }

    /// The most work one scrypt check may take: 128·N·r·p bytes of mixing, which is also its memory when p = 1.
    /// 128 MiB admits N = 2^17, r = 8 (OWASP's suggestion) and N = 2^19, r = 2; Firebase's own scrypt needs 16 MiB.
    static let maximumScryptWork = 1 << 27

    /// Checks the ranges Firebase documents for its algorithms (firebase-admin, `firebase auth:import`), and Herald's
    /// bounds where Firebase sets none, so that no imported hash makes a verification take unbounded time or memory.
    func validate() throws {
        switch self {
        case .firebaseScrypt(let signerKey, let saltSeparator, let rounds, let memoryCost):
            // The hash is the signer key encrypted, so it is as long as the key.
            try check(signerKey.count, in: 1...ImportedPasswordHash.maximumHashBytes, .invalidHashKey, "signerKey bytes")
            let separatorBytes = 0...ImportedPasswordHash.maximumKeyBytes
            try check(saltSeparator.count, in: separatorBytes, .invalidHashSaltSeparator, "saltSeparator bytes")
            try check(rounds, in: 1...8, .invalidHashRounds, "rounds")
            try check(memoryCost, in: 1...14, .invalidHashMemoryCost, "memoryCost")
        case .standardScrypt(let cpuMemCost, let blockSize, let parallelization, let dkLen):
            // blockSize over 16 with p = 1 trips the memory limit CryptoExtras' scrypt sets itself (128·N·r·p + a page).
            try check(blockSize, in: 1...16, .invalidHashBlockSize, "blockSize")
            try check(parallelization, in: 1...Int(Int32.max), .invalidHashParallelization, "parallelization")
            try check(dkLen, in: 1...ImportedPasswordHash.maximumHashBytes, .invalidHashDerivedKeyLength, "dkLen")
            // RFC 7914 wants N < 2^(16·r); from r = 4 on, no Int is that large.
            let underRFCLimit = 16 * blockSize >= Int.bitWidth - 1 || cpuMemCost < 1 << (16 * blockSize)
            guard cpuMemCost >= 2, cpuMemCost & (cpuMemCost - 1) == 0, underRFCLimit else {
                throw HeraldError(.invalidHashMemoryCost, "cpuMemCost must be a power of two from 2 to below 2^(16·blockSize)")
            }
            guard cpuMemCost <= Self.maximumScryptWork / (128 * blockSize * parallelization) else {
                let bound = "\(Self.maximumScryptWork >> 20) MiB"
                throw HeraldError(.invalidHashMemoryCost, "128·cpuMemCost·blockSize·parallelization must be at most \(bound)")
            }
        case .bcrypt:
            break
        case .pbkdf2(let digest, let rounds):
            guard digest == .sha1 || digest == .sha256 else {
                throw HeraldError(.invalidHashAlgorithm, "Unsupported hash algorithm \(algorithm)")
            }
            // Firebase's range is 0 to 120,000; Herald's own exports (`herald accounts export`) use PasswordHasher.rounds.
            try check(rounds, in: 0...max(120_000, PasswordHasher.rounds), .invalidHashRounds, "rounds")
        case .hmac(_, let key, _):
            try check(key.count, in: 1...ImportedPasswordHash.maximumKeyBytes, .invalidHashKey, "signerKey bytes")
        case .digest(let digest, let rounds, _):
            try check(rounds, in: (digest == .md5 ? 0 : 1)...8192, .invalidHashRounds, "rounds")
        }
    }

    private func check(_ value: Int, in range: ClosedRange<Int>, _ code: HeraldError.Code, _ field: String) throws {
        guard range.contains(value) else {
            let bounds = "from \(range.lowerBound) to \(range.upperBound)"
            throw HeraldError(code, "\(field) must be \(bounds) for hash algorithm \(algorithm)")
        }
    }

    private static func signerKey(_ parameters: ImportedPasswordHash.Parameters) throws -> [UInt8] {
        guard let key = parameters.signerKey.flatMap(Base64URL.decode), !key.isEmpty else {
            let algorithm = parameters.hashAlgorithm ?? ""
            throw HeraldError(.invalidHashKey, "A base64 signerKey is required for hash algorithm \(algorithm)")
        }
        return Array(key)
    }

    private static func saltSeparator(_ parameters: ImportedPasswordHash.Parameters) throws -> [UInt8] {
        guard let separator = Base64URL.decode(parameters.saltSeparator ?? "") else {
            throw HeraldError(.invalidHashSaltSeparator, "saltSeparator must be base64")
        }
        return Array(separator)
    }

    private static func order(_ parameters: ImportedPasswordHash.Parameters) throws -> ImportedPasswordHash.Order {
        guard let name = parameters.passwordHashOrder, name != "UNSPECIFIED_ORDER" else { return .saltFirst }
        guard let order = ImportedPasswordHash.Order(rawValue: name) else {
            throw HeraldError(.invalidArgument, "Invalid value at 'password_hash_order', \"\(name)\"")
        }
        return order
    }
}

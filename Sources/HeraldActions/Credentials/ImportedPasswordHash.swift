import Crypto
import CryptoExtras
import Foundation
import HeraldCore

/// A password hash brought over from Firebase (`accounts:batchCreate`, `firebase auth:import`), kept so the user
/// can sign in with their old password until Herald replaces it with its own hash.
///
/// Made from a batch's hash fields and one user's `passwordHash` and `salt`, stored in the account's
/// `password_hash` column as `storedForm`, and checked by `PasswordHasher.verify(_:against:)`:
///
/// ```swift
/// let scheme = try ImportedPasswordHash.Scheme(ImportedPasswordHash.Parameters(hashAlgorithm: "SHA256", rounds: 1))
/// let imported = try ImportedPasswordHash(scheme, passwordHash: user.passwordHash, salt: user.salt)
/// account.passwordHash = imported.storedForm  // "firebase-sha256$1$SALT_AND_PASSWORD$<salt>$<hash>"
/// ```
public struct ImportedPasswordHash: Hashable, Sendable {
    public let scheme: Scheme
    public let hash: [UInt8]
    public let salt: [UInt8]

    /// An imported hash from its bytes, checked as a request's would be (the stored form comes back this way too).
    public init(scheme: Scheme, hash: [UInt8], salt: [UInt8]) throws {
        try scheme.validate()
        guard salt.count <= Self.maximumSaltBytes else {
            throw HeraldError(.invalidPasswordSalt, "salt must be at most \(Self.maximumSaltBytes) bytes")
        }
        if let expected = scheme.hashByteCount, hash.count != expected {
            throw HeraldError(.invalidPasswordHash, "passwordHash must be \(expected) bytes for \(scheme.algorithm)")
        }
        guard !hash.isEmpty, hash.count <= Self.maximumHashBytes else {
            throw HeraldError(.invalidPasswordHash, "passwordHash must be 1 to \(Self.maximumHashBytes) bytes")
        }
        if scheme == .bcrypt {
            guard let cost = Bcrypt.cost(hash) else {
                throw HeraldError(.invalidPasswordHash, "passwordHash is not a bcrypt hash")
            }
            guard cost <= Bcrypt.maximumCost else {
                throw HeraldError(.invalidPasswordHash, "bcrypt cost \(cost) is over Herald's bound of \(Bcrypt.maximumCost)")
            }
        }
        self.scheme = scheme
        self.hash = hash
        self.salt = salt
    }

    /// How a batch's passwords were hashed: one of Firebase's `hashAlgorithm`s with its parameters.
    public enum Scheme: Hashable, Sendable {
        /// Firebase's own modified scrypt (github.com/firebase/scrypt): AES-256-CTR, zero IV, of the signer key
        /// under the first 32 bytes of scrypt(password, salt + separator, N = 2^memoryCost, r = rounds, p = 1, 64).
        case firebaseScrypt(signerKey: [UInt8], saltSeparator: [UInt8], rounds: Int, memoryCost: Int)
        /// scrypt (RFC 7914) of the password and salt; `cpuMemCost` is N itself.
        case standardScrypt(cpuMemCost: Int, blockSize: Int, parallelization: Int, dkLen: Int)
        /// bcrypt: the hash is the whole `$2b$<cost>$<salt><hash>` string, which carries its own cost and salt.
        case bcrypt
        /// PBKDF2-HMAC (`PBKDF_SHA1`, `PBKDF2_SHA256`) of the password and salt, as long as the hash; rounds 0 is one.
        case pbkdf2(Digest, rounds: Int)
        /// HMAC of the salted password under the batch's signer key.
        case hmac(Digest, key: [UInt8], order: Order)
        /// A plain digest of the salted password, hashed again until `rounds` hashes (0 counts as 1).
        case digest(Digest, rounds: Int, order: Order)
    }

    /// The hash functions Firebase's algorithms are built on.
    public enum Digest: String, Hashable, Sendable {
        case md5, sha1, sha256, sha512

        var byteCount: Int {
            switch self {
            case .md5: 16
            case .sha1: 20
            case .sha256: 32
            case .sha512: 64
            }
        }

        func hash(_ data: [UInt8]) -> [UInt8] {
            switch self {
            case .md5: Array(Insecure.MD5.hash(data: data))
            case .sha1: Array(Insecure.SHA1.hash(data: data))
            case .sha256: Array(SHA256.hash(data: data))
            case .sha512: Array(SHA512.hash(data: data))
            }
        }

        func hmac(_ data: [UInt8], key: [UInt8]) -> [UInt8] {
            let key = SymmetricKey(data: key)
            return switch self {
            case .md5: Array(HMAC<Insecure.MD5>.authenticationCode(for: data, using: key))
            case .sha1: Array(HMAC<Insecure.SHA1>.authenticationCode(for: data, using: key))
            case .sha256: Array(HMAC<SHA256>.authenticationCode(for: data, using: key))
            case .sha512: Array(HMAC<SHA512>.authenticationCode(for: data, using: key))
            }
        }
    }

    /// Firebase's `passwordHashOrder`: what the plain and HMAC digests hash. Salt first unless told otherwise.
    public enum Order: String, Hashable, Sendable {
        case saltFirst = "SALT_AND_PASSWORD"
        case passwordFirst = "PASSWORD_AND_SALT"

        func join(password: [UInt8], salt: [UInt8]) -> [UInt8] {
            self == .saltFirst ? salt + password : password + salt
        }
    }

    /// Whether `password` is the one this hash was made from, compared in constant time.
    ///
    /// Callers go through `PasswordHasher.verify(_:against:)`, which also evens out the time a wrong password takes.
    func verify(_ password: String) -> Bool {
        guard let computed = try? derive(Array(password.utf8)) else { return false }
        return Secret.equal(computed, hash)
    }

    /// What the scheme makes of `password` with this salt: equal to `hash` exactly when the password is right.
    private func derive(_ password: [UInt8]) throws -> [UInt8] {
        switch scheme {
        case .firebaseScrypt(let signerKey, let saltSeparator, let rounds, let memoryCost):
            let derived = try KDF.Scrypt.deriveKey(
                from: password, salt: salt + saltSeparator, outputByteCount: 64, rounds: 1 << memoryCost, blockSize: rounds,
                parallelism: 1)
            let key = derived.withUnsafeBytes { SymmetricKey(data: Array($0.prefix(32))) }
            let zeroIV = try AES._CTR.Nonce(nonceBytes: [UInt8](repeating: 0, count: 16))
            return Array(try AES._CTR.encrypt(signerKey, using: key, nonce: zeroIV))
        case .standardScrypt(let cpuMemCost, let blockSize, let parallelization, let dkLen):
            let derived = try KDF.Scrypt.deriveKey(
                from: password, salt: salt, outputByteCount: dkLen, rounds: cpuMemCost, blockSize: blockSize,
                parallelism: parallelization)
            return derived.withUnsafeBytes { Array($0) }
        case .bcrypt:
            return try Bcrypt.hash(password, setting: hash)
        case .pbkdf2(let digest, let rounds):
            let derived = try KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: digest.pbkdf2, outputByteCount: hash.count,
                unsafeUncheckedRounds: max(rounds, 1))
            return derived.withUnsafeBytes { Array($0) }
        case .hmac(let digest, let key, let order):
            return digest.hmac(order.join(password: password, salt: salt), key: key)
        case .digest(let digest, let rounds, let order):
            var value = digest.hash(order.join(password: password, salt: salt))
            for _ in 1..<max(rounds, 1) { value = digest.hash(value) }
            return value
        }
    }
}

extension ImportedPasswordHash.Digest {
    /// The same function for CryptoExtras' PBKDF2.
    fileprivate var pbkdf2: KDF.Insecure.PBKDF2.HashFunction {
        switch self {
        case .md5: .insecureMD5
        case .sha1: .insecureSHA1
        case .sha256: .sha256
        case .sha512: .sha512
        }
    }
}

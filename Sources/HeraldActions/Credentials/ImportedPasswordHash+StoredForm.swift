import HeraldCore

/// The stored form: one string in the account's `password_hash` column, beside Herald's own `pbkdf2-sha256$…`.
///
/// ```
/// stored  = "firebase-" name *("$" field) "$" salt "$" hash
/// name    = Firebase's hashAlgorithm, lower-case, "_" as "-"    (firebase-standard-scrypt, firebase-hmac-sha256)
/// fields  = SCRYPT:           rounds "$" memoryCost "$" signerKey "$" saltSeparator
///           STANDARD_SCRYPT:  cpuMemCost "$" blockSize "$" parallelization "$" dkLen
///           BCRYPT:           (none; the hash is the whole "$2b$…" string)
///           PBKDF_SHA1, PBKDF2_SHA256:  rounds
///           HMAC_*:           passwordHashOrder "$" signerKey
///           SHA*, MD5:        rounds "$" passwordHashOrder
/// numbers in decimal; passwordHashOrder SALT_AND_PASSWORD or PASSWORD_AND_SALT; signerKey, saltSeparator, salt and
/// hash in unpadded base64url, possibly empty. Neither alphabet has "$", so the fields split back unambiguously.
/// ```
extension ImportedPasswordHash {
    /// What every stored imported hash begins with.
    static let storedPrefix = "firebase-"

    /// The hash as one string for the `password_hash` column; `init(storedForm:)` reads it back.
    public var storedForm: String {
        let fields: [String] =
            switch scheme {
            case .firebaseScrypt(let signerKey, let saltSeparator, let rounds, let memoryCost):
                [String(rounds), String(memoryCost), Base64URL.encode(signerKey), Base64URL.encode(saltSeparator)]
            case .standardScrypt(let cpuMemCost, let blockSize, let parallelization, let dkLen):
                [String(cpuMemCost), String(blockSize), String(parallelization), String(dkLen)]
            case .bcrypt: []
            case .pbkdf2(_, let rounds): [String(rounds)]
            case .hmac(_, let key, let order): [order.rawValue, Base64URL.encode(key)]
            case .digest(_, let rounds, let order): [String(rounds), order.rawValue]
            }
        let name = Self.storedPrefix + scheme.algorithm.lowercased().replacingOccurrences(of: "_", with: "-")
        return ([name] + fields + [Base64URL.encode(salt), Base64URL.encode(hash)]).joined(separator: "$")
    }

    /// Reads a stored form back, checking it as an import's fields would be checked.
    ///
    /// - Throws: `INVALID_PASSWORD_HASH` when it is not a stored imported hash; the import's codes when its fields are
    ///   out of bounds.
    public init(storedForm: String) throws {
        var fields = storedForm.split(separator: "$", omittingEmptySubsequences: false).map(String.init)[...]
        guard let name = fields.popFirst(), name.hasPrefix(Self.storedPrefix), fields.count >= 2 else {
            throw Self.malformed
        }
        let hash = fields.removeLast()
        let salt = fields.removeLast()
        let algorithm = name.dropFirst(Self.storedPrefix.count).uppercased().replacingOccurrences(of: "-", with: "_")
        var parameters = Parameters(hashAlgorithm: algorithm)
        switch algorithm {
        case "SCRYPT":
            parameters.rounds = try Self.number(&fields)
            parameters.memoryCost = try Self.number(&fields)
            parameters.signerKey = try Self.text(&fields)
            parameters.saltSeparator = try Self.text(&fields)
        case "STANDARD_SCRYPT":
            parameters.cpuMemCost = try Self.number(&fields)
            parameters.blockSize = try Self.number(&fields)
            parameters.parallelization = try Self.number(&fields)
            parameters.dkLen = try Self.number(&fields)
        case "BCRYPT":
            break
        case "PBKDF_SHA1", "PBKDF2_SHA256":
            parameters.rounds = try Self.number(&fields)
        case _ where algorithm.hasPrefix("HMAC_"):
            parameters.passwordHashOrder = try Self.text(&fields)
            parameters.signerKey = try Self.text(&fields)
        default:
            parameters.rounds = try Self.number(&fields)
            parameters.passwordHashOrder = try Self.text(&fields)
        }
        guard fields.isEmpty else { throw Self.malformed }
        try self.init(try Scheme(parameters), passwordHash: hash, salt: salt)
    }

    private static let malformed = HeraldError(.invalidPasswordHash, "not a stored imported password hash")

    private static func text(_ fields: inout ArraySlice<String>) throws -> String {
        guard let text = fields.popFirst() else { throw malformed }
        return text
    }

    private static func number(_ fields: inout ArraySlice<String>) throws -> Int {
        guard let value = Int(try text(&fields)) else { throw malformed }
        return value
    }
}

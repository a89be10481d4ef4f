import Foundation
import HeraldCore

/// The files `firebase auth:export` writes and `firebase auth:import` reads: JSON (`{"users": [...]}`) or CSV (no
/// header; Firebase's fixed columns), and the project's password hash parameters as the Firebase console shows them.
///
/// ```swift
/// let users = try FirebaseUserFile.read("users.json")
/// let hash = try FirebaseUserFile.hashParameters(text: try String(contentsOfFile: "hash-config.txt", encoding: .utf8))
/// ```
public enum FirebaseUserFile {
    /// A JSON export: its users, and (in Herald's own exports) the hash parameters of their passwords.
    struct JSONExport: Decodable {
        let users: [ImportedUser]
        let hashConfig: ImportedPasswordHash.Parameters?
    }

    /// The users of a Firebase export, and the hash parameters a Herald export carries beside them (Firebase's own
    /// exports carry none: the operator copies them from the console).
    public static func read(_ path: String) throws -> (users: [ImportedUser], hashConfig: ImportedPasswordHash.Parameters?) {
        guard let data = FileManager.default.contents(atPath: path) else { throw HeraldError(.argumentError, "cannot read \(path)") }
        if path.lowercased().hasSuffix(".csv") {
            guard let text = String(data: data, encoding: .utf8) else { throw HeraldError(.argumentError, "\(path) is not UTF-8") }
            return (try csvUsers(text, path: path), nil)
        }
        do {
            let export = try JSONDecoder().decode(JSONExport.self, from: data)
            return (export.users, export.hashConfig)
        } catch let error as DecodingError {
            throw HeraldError(.argumentError, "\(path) is not a Firebase JSON export ({\"users\": [...]}): \(describe(error))")
        }
    }

    /// Where `firebase auth:export` puts each provider's four columns (raw id, email, display name, photo URL).
    static let providerColumns: [(provider: String, column: Int)] = [
        ("google.com", 7), ("facebook.com", 11), ("twitter.com", 15), ("github.com", 19), ("apple.com", 28),
        ("microsoft.com", 32), ("gc.apple.com", 36), ("playgames.google.com", 40), ("linkedin.com", 44), ("yahoo.com", 48),
    ]
    static let columnCount = 52

    /// A CSV export's users: one line each, fields by position; hashes and salts in standard base64.
    static func csvUsers(_ text: String, path: String) throws -> [ImportedUser] {
        var users: [ImportedUser] = []
        for (index, line) in try records(text).enumerated() where !line.allSatisfy(\.isEmpty) {
            func cell(_ column: Int) -> String? {
                guard column < line.count else { return nil }
                let value = line[column].trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value
            }
            guard line.count >= 28 else {
                throw HeraldError(.argumentError, "\(path): record \(index + 1) has \(line.count) fields, not a Firebase CSV export")
            }
            var user = ImportedUser(
                localId: cell(0), email: cell(1), emailVerified: cell(2).map { $0.lowercased() == "true" }, passwordHash: cell(3),
                salt: cell(4), displayName: cell(5), photoUrl: cell(6), disabled: cell(26).map { $0.lowercased() == "true" },
                createdAt: cell(23), lastLoginAt: cell(24), customAttributes: cell(27), phoneNumber: cell(25))
            var providers: [ImportedUser.Provider] = []
            for (provider, column) in providerColumns {
                guard let rawId = cell(column) else { continue }
                providers.append(
                    ImportedUser.Provider(
                        providerId: provider, rawId: rawId, email: cell(column + 1), displayName: cell(column + 2),
                        photoUrl: cell(column + 3)))
            }
            user.providerUserInfo = providers.isEmpty ? nil : providers
            users.append(user)
        }
        return users
    }

    /// A CSV text's records: its lines, a line break inside a quoted cell joining two.
    static func records(_ text: String) throws -> [[String]] {
        var records: [[String]] = []
        var pending: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            let record = pending.map { $0 + "\n" + line } ?? String(line)
            // An odd count of quotes so far: a quoted cell runs on into the next line.
            if record.utf8.count(where: { $0 == UInt8(ascii: "\"") }) % 2 == 1 {
                pending = record
                continue
            }
            pending = nil
            if !record.isEmpty { records.append(try CSVLine.parse(record)) }
        }
        if pending != nil { throw HeraldError(.argumentError, "the CSV file ends inside a quoted cell") }
        return records
    }

    /// The hash parameters from the text the Firebase console shows under "Password hash parameters"
    /// (`hash_config { algorithm: SCRYPT, base64_signer_key: …, base64_salt_separator: …, rounds: 8, mem_cost: 14 }`),
    /// or from JSON with `accounts:batchCreate`'s field names (`hashAlgorithm`, `signerKey`, …).
    ///
    /// - Throws: `ARGUMENT_ERROR` naming the line it cannot read.
    public static func hashParameters(text: String) throws -> ImportedPasswordHash.Parameters {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            do {
                return try JSONDecoder().decode(ImportedPasswordHash.Parameters.self, from: Data(trimmed.utf8))
            } catch let error as DecodingError {
                throw HeraldError(.argumentError, "the hash configuration is not valid JSON: \(describe(error))")
            }
        }
        var fields: [String: String] = [:]
        for (number, raw) in trimmed.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasSuffix(",") { line.removeLast() }
            if line.isEmpty || line == "}" || line.hasSuffix("{") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                // The line may be part of a key: named by number only.
                throw HeraldError(.argumentError, "hash configuration line \(number + 1) is not 'name: value'")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            var value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            fields[name] = value
        }
        var parameters = ImportedPasswordHash.Parameters(hashAlgorithm: fields["algorithm"] ?? fields["hash_algorithm"])
        func number(_ name: String) throws -> Int? {
            guard let text = fields[name] else { return nil }
            guard let value = Int(text) else { throw HeraldError(.argumentError, "hash configuration \(name) is not a number") }
            return value
        }
        parameters.signerKey = fields["base64_signer_key"] ?? fields["signer_key"] ?? fields["key"]
        parameters.saltSeparator = fields["base64_salt_separator"] ?? fields["salt_separator"]
        parameters.rounds = try number("rounds")
        let memoryCost = try number("mem_cost") ?? number("memory_cost")
        if parameters.hashAlgorithm?.uppercased() == "STANDARD_SCRYPT" {
            parameters.cpuMemCost = try number("cpu_mem_cost") ?? memoryCost
        } else {
            parameters.memoryCost = memoryCost
        }
        parameters.parallelization = try number("parallelization")
        parameters.blockSize = try number("block_size")
        parameters.dkLen = try number("dk_len")
        parameters.passwordHashOrder = fields["password_hash_order"]
        return parameters
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? context.debugDescription : "at \(path.drop { $0 == "." }): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

extension FirebaseUserFile {
    /// One user of a Herald export, under the keys `firebase auth:export` writes.
    struct ExportedUser: Encodable {
        struct Provider: Encodable {
            let providerId: String
            let rawId: String
            let email: String?
            let displayName: String?
            let photoUrl: String?
        }

        let localId: String
        let email: String?
        let emailVerified: Bool
        let passwordHash: String?
        let salt: String?
        let displayName: String?
        let photoUrl: String?
        let lastSignedInAt: String?
        let createdAt: String
        let phoneNumber: String?
        let disabled: Bool
        let customAttributes: String?
        let providerUserInfo: [Provider]?
        /// Herald's own key: an imported hash still waiting for the user's first sign-in, in Herald's stored form,
        /// which carries its own algorithm and parameters. Only Herald reads it (`firebase auth:import` refuses it).
        let heraldPasswordHash: String?

        init(_ account: Account, identities: [FederatedIdentity]) {
            localId = account.uid
            email = account.email
            emailVerified = account.emailVerified
            displayName = account.displayName
            photoUrl = account.photoURL
            lastSignedInAt = account.lastLoginAt.map { String($0.milliseconds) }
            createdAt = String(account.createdAt.milliseconds)
            phoneNumber = account.phoneNumber
            disabled = account.disabled
            customAttributes = account.customAttributes
            let providers = identities.map {
                Provider(providerId: $0.providerId, rawId: $0.rawId, email: $0.email, displayName: $0.displayName, photoUrl: $0.photoURL)
            }
            providerUserInfo = providers.isEmpty ? nil : providers
            if let stored = account.passwordHash, let own = PasswordHasher.exportable(stored) {
                (passwordHash, salt, heraldPasswordHash) = (own.hash, own.salt, nil)
            } else {
                (passwordHash, salt, heraldPasswordHash) = (nil, nil, account.passwordHash)
            }
        }
    }

    /// The hash parameters of every `passwordHash` in a Herald export: Herald's own PBKDF2-SHA256.
    static var ownHashConfig: ImportedPasswordHash.Parameters {
        ImportedPasswordHash.Parameters(hashAlgorithm: "PBKDF2_SHA256", rounds: PasswordHasher.rounds)
    }

    /// What `AccountsService.exportUsers` wrote.
    public struct ExportSummary: Sendable {
        public var users = 0
        /// Users whose password hash is still the one they were imported with (written as `heraldPasswordHash`).
        public var pendingImportedHashes = 0
    }
}

extension AccountsService {
    /// Writes every account to `path` as a Firebase JSON export (`{"users": [...]}`, Firebase's keys), with the
    /// parameters of Herald's own password hashes as `hashConfig` beside them, so `herald accounts import` reads
    /// the file back and `firebase auth:import` takes it with `--hash-algo PBKDF2_SHA256 --rounds 210000`.
    /// `progress` hears the count written after each page.
    public func exportUsers(to path: String, progress: (Int) -> Void = { _ in }) throws -> FirebaseUserFile.ExportSummary {
        try requireAccountOwnership("herald accounts export")
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let file = FileHandle(forWritingAtPath: path)
        else { throw HeraldError(.argumentError, "cannot write \(path)") }
        defer { try? file.close() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let config = String(decoding: try encoder.encode(FirebaseUserFile.ownHashConfig), as: UTF8.self)
        try file.write(contentsOf: Data("{\"hashConfig\": \(config),\n\"users\": [".utf8))
        var summary = FirebaseUserFile.ExportSummary()
        var after: String?
        while true {
            let page = try store.accounts(after: after, limit: 1000)
            guard let last = page.last else { break }
            var chunk = Data()
            for account in page {
                let user = FirebaseUserFile.ExportedUser(account, identities: try store.identities(uid: account.uid))
                if user.heraldPasswordHash != nil { summary.pendingImportedHashes += 1 }
                chunk.append(contentsOf: (summary.users == 0 ? "\n" : ",\n").utf8)
                chunk.append(try encoder.encode(user))
                summary.users += 1
            }
            try file.write(contentsOf: chunk)
            progress(summary.users)
            after = last.uid
        }
        try file.write(contentsOf: Data("\n]}\n".utf8))
        return summary
    }
}

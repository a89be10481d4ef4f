import Foundation
import HeraldCore
import HeraldStore
import Synchronization

/// One user of an import: an element of `accounts:batchCreate`'s `users`, or of a Firebase export's (`firebase
/// auth:export`) `users`. Times are Unix milliseconds, as a number or a string of digits; `passwordHash` and `salt`
/// are base64 (url-safe or standard), read under the batch's `ImportedPasswordHash.Scheme`.
public struct ImportedUser: Sendable, Hashable, Decodable {
    /// One provider identity of the user (`providerUserInfo`); `password` and `phone` entries are the account's own.
    public struct Provider: Sendable, Hashable, Decodable {
        public var providerId: String?
        public var rawId: String?
        public var federatedId: String?
        public var email: String?
        public var displayName: String?
        public var photoUrl: String?
        public var screenName: String?

        public init(
            providerId: String? = nil, rawId: String? = nil, federatedId: String? = nil, email: String? = nil,
            displayName: String? = nil, photoUrl: String? = nil, screenName: String? = nil
        ) {
            self.providerId = providerId
            self.rawId = rawId
            self.federatedId = federatedId
            self.email = email
            self.displayName = displayName
            self.photoUrl = photoUrl
            self.screenName = screenName
        }
    }

    public var localId: String?
    public var email: String?
    public var emailVerified: Bool?
    public var passwordHash: String?
    public var salt: String?
    /// A plaintext password, hashed with Herald's own hash on the way in (the Auth Emulator's extension).
    public var rawPassword: String?
    public var displayName: String?
    public var photoUrl: String?
    public var disabled: Bool?
    public var createdAt: String?
    public var lastLoginAt: String?
    public var customAttributes: String?
    public var phoneNumber: String?
    public var providerUserInfo: [Provider]?
    /// How many second factors the user has enrolled; Herald has none to import them as.
    public var secondFactors: Int
    /// A password hash in Herald's stored form (`heraldPasswordHash`, which Herald's own exports write for a hash
    /// still as imported); taken as it is when Herald can verify it.
    public var storedPasswordHash: String?

    public init(
        localId: String? = nil, email: String? = nil, emailVerified: Bool? = nil, passwordHash: String? = nil,
        salt: String? = nil, rawPassword: String? = nil, displayName: String? = nil, photoUrl: String? = nil,
        disabled: Bool? = nil, createdAt: String? = nil, lastLoginAt: String? = nil, customAttributes: String? = nil,
        phoneNumber: String? = nil, providerUserInfo: [Provider]? = nil, secondFactors: Int = 0, storedPasswordHash: String? = nil
    ) {
        self.localId = localId
        self.email = email
        self.emailVerified = emailVerified
        self.passwordHash = passwordHash
        self.salt = salt
        self.rawPassword = rawPassword
        self.displayName = displayName
        self.photoUrl = photoUrl
        self.disabled = disabled
        self.createdAt = createdAt
        self.lastLoginAt = lastLoginAt
        self.customAttributes = customAttributes
        self.phoneNumber = phoneNumber
        self.providerUserInfo = providerUserInfo
        self.secondFactors = secondFactors
        self.storedPasswordHash = storedPasswordHash
    }

    enum CodingKeys: String, CodingKey {
        case localId, email, emailVerified, passwordHash, salt, rawPassword, displayName, photoUrl, disabled, createdAt,
            lastLoginAt, lastSignedInAt, customAttributes, phoneNumber, providerUserInfo, mfaInfo, heraldPasswordHash
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String? {
            if let number = try? container.decodeIfPresent(Int64.self, forKey: key) { return String(number) }
            return try container.decodeIfPresent(String.self, forKey: key)
        }
        func flag(_ key: CodingKeys) throws -> Bool? {
            if let value = try? container.decodeIfPresent(Bool.self, forKey: key) { return value }
            // A CSV-born export writes flags as strings.
            guard let value = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            return value.lowercased() == "true"
        }
        localId = try container.decodeIfPresent(String.self, forKey: .localId)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        emailVerified = try flag(.emailVerified)
        passwordHash = try container.decodeIfPresent(String.self, forKey: .passwordHash)
        salt = try container.decodeIfPresent(String.self, forKey: .salt)
        rawPassword = try container.decodeIfPresent(String.self, forKey: .rawPassword)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        photoUrl = try container.decodeIfPresent(String.self, forKey: .photoUrl)
        disabled = try flag(.disabled)
        createdAt = try text(.createdAt)
        // `firebase auth:export` names it lastSignedInAt.
        lastLoginAt = try text(.lastLoginAt) ?? text(.lastSignedInAt)
        customAttributes = try container.decodeIfPresent(String.self, forKey: .customAttributes)
        phoneNumber = try container.decodeIfPresent(String.self, forKey: .phoneNumber)
        providerUserInfo = try container.decodeIfPresent([Provider].self, forKey: .providerUserInfo)
        secondFactors = try container.decodeIfPresent([IgnoredValue].self, forKey: .mfaInfo)?.count ?? 0
        storedPasswordHash = try container.decodeIfPresent(String.self, forKey: .heraldPasswordHash)
    }

    /// Any JSON value, read only to be counted.
    private struct IgnoredValue: Decodable {
        init(from decoder: any Decoder) throws {}
    }
}

/// How an import treats what is already there (`accounts:batchCreate`'s flags).
public struct UserImportOptions: Sendable, Hashable {
    /// Replace the account with the same `localId` instead of refusing the user.
    public var allowOverwrite: Bool
    /// Refuse the whole batch when two of its users share an email or a provider identity.
    public var sanityCheck: Bool

    public init(allowOverwrite: Bool = false, sanityCheck: Bool = false) {
        self.allowOverwrite = allowOverwrite
        self.sanityCheck = sanityCheck
    }
}

/// A user an import left out, and why, as `accounts:batchCreate` reports it (`error: [{index, message}]`).
public struct UserImportFailure: Sendable, Hashable, Encodable {
    public let index: Int
    public let message: String
    /// What already in the ledger kept the user out, if that is why: `uidExists` on a re-run of an import.
    public let conflict: ImportConflict?

    enum CodingKeys: String, CodingKey { case index, message }
}

extension AccountsService {
    /// The most users one `accounts:batchCreate` takes, as Firebase's.
    public static let maximumImportBatch = 1000

    /// Imports a batch of users (firebase-admin's `import_users`, `firebase auth:import`, `herald accounts import`).
    ///
    /// Imported password hashes are kept as they came (`ImportedPasswordHash`) until the user's first password
    /// sign-in replaces them; plaintext `rawPassword`s are hashed now, on every core. Users that cannot be imported
    /// are answered by index; the others are written in one transaction.
    ///
    /// - Throws: for the whole batch: `MISSING_USER_ACCOUNT`, `INVALID_ARGUMENT` (over 1,000 users),
    ///   `DUPLICATE_LOCAL_ID` (without `allowOverwrite`), `DUPLICATE_EMAIL` and `DUPLICATE_RAW_ID` (with
    ///   `sanityCheck`), the hash errors of `ImportedPasswordHash.Scheme` when a user carries a `passwordHash`.
    public func importUsers(
        _ users: [ImportedUser], hash parameters: ImportedPasswordHash.Parameters, options: UserImportOptions = UserImportOptions(),
        now: Date = Date()
    ) throws -> [UserImportFailure] {
        try requireAccountOwnership("batchCreate")
        guard !users.isEmpty else { throw HeraldError(.missingUserAccount, "") }
        guard users.count <= Self.maximumImportBatch else {
            throw HeraldError(.invalidArgument, "at most \(Self.maximumImportBatch) users per import request")
        }
        try Self.checkBatch(users, options)
        let hashed = users.contains { $0.passwordHash != nil && $0.storedPasswordHash == nil }
        let scheme = try hashed ? ImportedPasswordHash.Scheme(parameters) : nil

        var failures: [Int: String] = [:]
        var accepted: [(index: Int, imported: ImportedAccount)] = []
        for (index, user) in users.enumerated() {
            do {
                accepted.append((index, try Self.account(of: user, scheme: scheme, now: now)))
            } catch let error as UserImportRefusal {
                failures[index] = error.message
            } catch let error as HeraldError {
                failures[index] = error.description
            }
        }
        // Plaintext passwords take Herald's slow hash, on every core; a user whose uid is taken already (a re-run) is
        // answered without it and never reaches the ledger, so it cannot be written without its password.
        var conflicted: [Int: ImportConflict] = [:]
        if !options.allowOverwrite {
            for entry in accepted where users[entry.index].rawPassword != nil && entry.imported.account.passwordHash == nil {
                guard try store.account(uid: entry.imported.account.uid) != nil else { continue }
                failures[entry.index] = Self.message(.uidExists)
                conflicted[entry.index] = .uidExists
            }
            accepted.removeAll { conflicted[$0.index] != nil }
        }
        // A user that came with a hash keeps it: `rawPassword` only stands in for a missing one.
        let plaintext = accepted.indices.filter {
            users[accepted[$0].index].rawPassword != nil && accepted[$0].imported.account.passwordHash == nil
        }
        let hashes = try Self.hashInParallel(plaintext.map { users[accepted[$0].index].rawPassword })
        for (position, hash) in zip(plaintext, hashes) { accepted[position].imported.account.passwordHash = hash }

        let conflicts = try store.importAccounts(accepted.map(\.imported), overwrite: options.allowOverwrite, now: now)
        for (position, conflict) in conflicts {
            let index = accepted[position].index
            failures[index] = Self.message(conflict)
            conflicted[index] = conflict
        }
        return failures.keys.sorted().map { UserImportFailure(index: $0, message: failures[$0]!, conflict: conflicted[$0]) }
    }

    /// Lists accounts a page at a time, ordered by uid (`accounts:batchGet`): up to `limit`, after `pageToken` (the
    /// last uid of the page before). The next page token is the page's last uid whenever the page is full.
    public func accountsPage(after pageToken: String?, limit: Int) throws -> (accounts: [Account], nextPageToken: String?) {
        try requireAccountOwnership("batchGet")
        let page = try store.accounts(after: pageToken.flatMap { $0.isEmpty ? nil : $0 }, limit: limit)
        return (page, page.count == limit ? page.last?.uid : nil)
    }

    /// Up to `limit` accounts in uid order after skipping `offset` (`accounts:query` without expressions).
    public func accounts(offset: Int, limit: Int) throws -> [Account] {
        try requireAccountOwnership("query")
        return try store.accounts(after: nil, offset: offset, limit: limit)
    }

    /// How many accounts there are (`accounts:query` with `returnUserInfo: false`).
    public func accountCount() throws -> Int {
        try requireAccountOwnership("query")
        return try store.accountCount()
    }

    /// Deletes accounts by uid (`accounts:batchDelete`): without `force`, only disabled ones, as Firebase does.
    /// Unknown uids are skipped. Answers each refused account by its index in `uids`.
    ///
    /// - Throws: `LOCAL_ID_LIST_EXCEEDS_LIMIT` for no uids or more than 1,000.
    public func deleteAccounts(uids: [String], force: Bool) throws -> [(index: Int, uid: String, message: String)] {
        try requireAccountOwnership("batchDelete")
        guard (1...Self.maximumImportBatch).contains(uids.count) else { throw HeraldError(.localIDListExceedsLimit, "") }
        let refused = Set(try store.deleteAccounts(uids: uids) { force || $0.disabled })
        return uids.enumerated().filter { refused.contains($0.element) }.map {
            ($0.offset, $0.element, "NOT_DISABLED : Disable the account before batch deletion.")
        }
    }

    // MARK: - One user

    /// A user's problem, in the words `accounts:batchCreate` answers it with.
    struct UserImportRefusal: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    static func message(_ conflict: ImportConflict) -> String {
        switch conflict {
        case .uidExists: "localId belongs to an existing account - can not overwrite."
        case .emailExists: "email exists in other account in database"
        case .identityExists: "raw id exists in other account in database"
        case .phoneNumberExists: "phone number exists in other account in database"
        }
    }

    /// The batch-wide checks Firebase makes before any user: repeated uids, and with `sanityCheck` repeated emails
    /// and provider identities.
    static func checkBatch(_ users: [ImportedUser], _ options: UserImportOptions) throws {
        if options.sanityCheck {
            var emails: Set<String> = []
            var identities: Set<String> = []
            for user in users {
                if let email = user.email, !emails.insert(email.lowercased()).inserted {
                    throw HeraldError(.duplicateEmail, email)
                }
                for provider in user.providerUserInfo ?? [] {
                    let (id, raw) = (provider.providerId ?? "", provider.rawId ?? "")
                    if !identities.insert("\(id):\(raw)").inserted {
                        throw HeraldError(.duplicateRawID, "Provider id(\(id)), Raw id(\(raw))")
                    }
                }
            }
        }
        if !options.allowOverwrite {
            var uids: Set<String> = []
            for user in users where !uids.insert(user.localId ?? "").inserted {
                throw HeraldError(.duplicateLocalID, user.localId ?? "")
            }
        }
    }

    /// The account one user becomes, or why it cannot be imported (`UserImportRefusal`, or a `HeraldError`).
    static func account(of user: ImportedUser, scheme: ImportedPasswordHash.Scheme?, now: Date) throws -> ImportedAccount {
        guard let uid = user.localId, !uid.isEmpty else { throw UserImportRefusal("localId is missing") }
        guard uid.utf8.count <= 128 else { throw UserImportRefusal("localId must be at most 128 characters") }
        var email: String?
        if let address = user.email {
            guard let valid = try? EmailAddress(address).value else { throw UserImportRefusal("email is invalid") }
            email = valid
        }
        if let phone = user.phoneNumber, !Self.isPhoneNumber(phone) { throw UserImportRefusal("phone number format is invalid") }
        let claims = try user.customAttributes.flatMap(Self.checkCustomClaims)
        var identities: [FederatedIdentity] = []
        for provider in user.providerUserInfo ?? [] {
            if provider.providerId == "password" || provider.providerId == "phone" { continue }  // the account's own
            guard let providerId = provider.providerId, !providerId.isEmpty, let rawId = provider.rawId, !rawId.isEmpty else {
                if provider.federatedId != nil && provider.providerId == nil && provider.rawId == nil {
                    throw UserImportRefusal("federatedId alone is not enough for Herald: give providerId and rawId")
                }
                throw UserImportRefusal("federatedId or (providerId & rawId) is required")
            }
            guard !identities.contains(where: { $0.providerId == providerId }) else {
                throw UserImportRefusal("providerUserInfo lists \(providerId) twice")
            }
            identities.append(
                FederatedIdentity(
                    providerId: providerId, rawId: rawId, email: provider.email?.lowercased(), displayName: provider.displayName,
                    photoURL: provider.photoUrl, screenName: provider.screenName))
        }
        if user.secondFactors > 0 {
            throw UserImportRefusal("second factors (mfaInfo) cannot be imported: Herald has no multi-factor sign-in")
        }
        var passwordHash: String?
        if let stored = user.storedPasswordHash {
            guard PasswordHasher.isVerifiable(stored) else {
                throw UserImportRefusal("heraldPasswordHash is not a password hash Herald can verify")
            }
            passwordHash = stored
        } else if let hash = user.passwordHash {
            guard let scheme else { throw HeraldError(.missingHashAlgorithm, "") }  // `importUsers` made one
            passwordHash = try ImportedPasswordHash(scheme, passwordHash: hash, salt: user.salt).storedForm
        } else if let password = user.rawPassword {
            try PasswordHasher.checkStrength(password)
        }
        let created = try user.createdAt.map { try Self.milliseconds($0, "createdAt") } ?? now.milliseconds
        let lastLogin = try user.lastLoginAt.map { try Self.milliseconds($0, "lastLoginAt") }
        var providers: [String] = []
        if email != nil && (passwordHash != nil || user.rawPassword != nil) { providers.append("password") }
        providers += identities.map(\.providerId)
        let account = Account(
            uid: uid, email: email, emailVerified: user.emailVerified ?? false, passwordHash: passwordHash,
            displayName: try user.displayName.map(DisplayName.validate), disabled: user.disabled ?? false,
            validSince: now.milliseconds - 1000, createdAt: Date(milliseconds: created),
            lastLoginAt: lastLogin.map(Date.init(milliseconds:)), providers: providers, photoURL: user.photoUrl,
            customAttributes: claims, phoneNumber: user.phoneNumber)
        return ImportedAccount(account: account, identities: identities)
    }

    /// E.164: a plus and up to 15 digits.
    static func isPhoneNumber(_ text: String) -> Bool {
        let digits = text.utf8.dropFirst()
        return text.hasPrefix("+") && (2...15).contains(digits.count) && digits.allSatisfy { (48...57).contains($0) }
    }

    /// Custom claims as Firebase takes them (`CustomClaims.validate`), refused in the words of an import's answer.
    static func checkCustomClaims(_ text: String) throws -> String? {
        do {
            return try CustomClaims.validate(text)
        } catch let error as HeraldError {
            switch error.code {
            case .claimsTooLarge: throw UserImportRefusal("Custom claims provided are too large.")
            case .forbiddenClaim: throw UserImportRefusal("Custom claims provided include a reserved claim.")
            default: throw UserImportRefusal("Invalid custom claims provided.")
            }
        }
    }

    static func milliseconds(_ text: String, _ field: String) throws -> Int64 {
        guard let value = Int64(text), value >= 0, value < 253_402_300_800_000 else {
            throw UserImportRefusal("\(field) must be Unix milliseconds")
        }
        return value
    }

    /// One slot per core for imports' password hashes, process-wide: concurrent imports share the cores instead of
    /// each taking all of them from sign-ins.
    static let hashingSlots = DispatchSemaphore(value: max(1, ProcessInfo.processInfo.activeProcessorCount))

    /// Herald's hash of each password (nil stays nil), spread over every core: a PBKDF2 hash takes ~30 ms.
    ///
    /// Threads of its own: `DispatchQueue.concurrentPerform` called from a Swift concurrency thread (the CLI's
    /// commands, `offload`) ran every iteration on the calling thread, one core.
    static func hashInParallel(_ passwords: [String?]) throws -> [String?] {
        guard !passwords.isEmpty else { return [] }
        let results = Mutex([String?](repeating: nil, count: passwords.count))
        let failure = Mutex<(any Error)?>(nil)
        let next = Atomic<Int>(0)
        let done = DispatchGroup()
        let threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, passwords.count))
        for _ in 0..<threads {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                while true {
                    let index = next.add(1, ordering: .relaxed).oldValue
                    guard index < passwords.count else { return }
                    guard let password = passwords[index] else { continue }
                    hashingSlots.wait()
                    defer { hashingSlots.signal() }
                    do {
                        let hash = try PasswordHasher.hash(password)
                        results.withLock { $0[index] = hash }
                    } catch {
                        failure.withLock { $0 = error }
                    }
                }
            }
            thread.name = "herald-hash"
            thread.start()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        return results.withLock { $0 }
    }
}

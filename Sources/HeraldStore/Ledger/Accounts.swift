import Foundation
import HeraldCore

extension LedgerEngine {
    public func account(uid: String) throws -> Account? {
        try read { db in try Self.account(db, uid: uid) }
    }

    public func account(email: String) throws -> Account? {
        try read { db in try Self.account(db, email: email) }
    }

    public func account(phoneNumber: String) throws -> Account? {
        try read { db in try db.fetchOne("SELECT * FROM accounts WHERE phone_number = ?", [phoneNumber]).map(Records.account) }
    }

    public func account(providerEmail email: String) throws -> Account? {
        try read { db in
            let uid = try db.value(
                "SELECT uid FROM federated_identities WHERE lower(email) = lower(?) ORDER BY linked_at LIMIT 1", [email],
                as: String.self)
            return try uid.flatMap { try Self.account(db, uid: $0) }
        }
    }

    public func standings(emails: [String]) throws -> [String: AccountStanding] {
        guard !emails.isEmpty else { return [:] }
        return try read { db in
            var standings: [String: AccountStanding] = [:]
            // SQLite's default limit on host parameters is 32,766: stay well below it (PostgreSQL binds one array).
            for start in stride(from: 0, to: emails.count, by: 10_000) {
                let chunk = Array(emails[start..<min(start + 10_000, emails.count)])
                let (listed, arguments) = db.dialect.listedAddress("email", chunk)
                for row in try db.fetchAll("SELECT email, disabled, email_verified, display_name FROM accounts WHERE \(listed)", arguments) {
                    let (email, standing) = Records.standing(row)
                    standings[email] = standing
                }
            }
            return standings
        }
    }

    public func createAccount(_ account: Account) throws {
        try write { db in try Self.insert(db, account) }
    }

    public func updateAccount(uid: String, _ change: (inout Account) throws -> Void) throws -> Account {
        // `change` runs again (on the account as then read) if the transaction loses a race and is re-run.
        try write { db in
            var account = try AccountKeyRules.present(try Self.account(db, uid: uid))
            try change(&account)
            try Self.update(db, account)
            return account
        }
    }

    public func recordLogin(uid: String, at date: Date) throws {
        try write { db in
            try db.execute("UPDATE accounts SET last_login_at = ? WHERE uid = ?", [date.milliseconds, uid])
        }
    }

    public func deleteAccount(uid: String) throws -> Bool {
        try write { db in
            guard try db.execute("DELETE FROM accounts WHERE uid = ?", [uid]) > 0 else { return false }
            try Self.revokeRefreshTokens(db, uid: uid)
            return true
        }
    }

    public func createRefreshToken(_ token: RefreshTokenRecord) throws {
        try write { db in
            try db.execute(
                "INSERT INTO refresh_tokens (token_hash, uid, provider, issued_at) VALUES (?, ?, ?, ?)",
                [Data(token.hash), token.uid, token.provider, token.issuedAt.milliseconds])
        }
    }

    public func refreshToken(hash: [UInt8]) throws -> RefreshTokenRecord? {
        try read { db in
            try db.fetchOne("SELECT * FROM refresh_tokens WHERE token_hash = ?", [Data(hash)]).map { Records.refreshToken($0, hash: hash) }
        }
    }

    public func accounts(limit: Int?) throws -> [Account] {
        try read { db in
            // Ties ordered bytewise, as SQLite's BINARY collation orders them.
            let sql = "SELECT * FROM accounts ORDER BY created_at, uid\(db.dialect.bytewise)" + (limit.map { " LIMIT \($0)" } ?? "")
            return try db.fetchAll(sql, []).map(Records.account)
        }
    }

    public func accounts(after uid: String?, offset: Int, limit: Int) throws -> [Account] {
        try read { db in
            let bytewise = db.dialect.bytewise
            let order = " ORDER BY uid\(bytewise) LIMIT \(max(0, limit)) OFFSET \(max(0, offset))"
            guard let uid else { return try db.fetchAll("SELECT * FROM accounts" + order, []).map(Records.account) }
            return try db.fetchAll("SELECT * FROM accounts WHERE uid\(bytewise) > ?" + order, [uid]).map(Records.account)
        }
    }

    public func accountCount() throws -> Int {
        try read { db in Int(try db.value("SELECT COUNT(*) FROM accounts", [], as: Int64.self) ?? 0) }
    }

    public func importAccounts(_ accounts: [ImportedAccount], overwrite: Bool, now: Date) throws -> [Int: ImportConflict] {
        try write { db in
            // Who holds the batch's keys, read in three statements rather than three per account (a 100,000-user
            // import spent most of its time preparing per-account lookups); kept current as the batch is written.
            var uids = Set(try Self.listed(db, "SELECT uid FROM accounts WHERE", column: "uid", accounts.map(\.account.uid)))
            var addresses: [String: String] = [:]
            let emails = accounts.compactMap(\.account.email)
            for start in stride(from: 0, to: emails.count, by: 1000) {
                let (listed, arguments) = db.dialect.listedAddress("email", Array(emails[start..<min(start + 1000, emails.count)]))
                for row in try db.rows("SELECT uid, email FROM accounts WHERE \(listed)", arguments) {
                    addresses[(row["email"] as String).lowercased()] = row["uid"] as String
                }
            }
            var phones: [String: String] = [:]
            let numbers = accounts.compactMap(\.account.phoneNumber)
            for start in stride(from: 0, to: numbers.count, by: 1000) {
                let (listed, arguments) = db.dialect.oneOf("phone_number", Array(numbers[start..<min(start + 1000, numbers.count)]))
                for row in try db.rows("SELECT uid, phone_number FROM accounts WHERE \(listed)", arguments) {
                    phones[row["phone_number"] as String] = row["uid"] as String
                }
            }
            var identities: [String: String] = [:]
            let rawIDs = accounts.flatMap { $0.identities.map(\.rawId) }
            for start in stride(from: 0, to: rawIDs.count, by: 1000) {
                let (listed, arguments) = db.dialect.oneOf("raw_id", Array(rawIDs[start..<min(start + 1000, rawIDs.count)]))
                for row in try db.rows("SELECT provider_id, raw_id, uid FROM federated_identities WHERE \(listed)", arguments) {
                    identities["\(row["provider_id"] as String)\u{0}\(row["raw_id"] as String)"] = row["uid"] as String
                }
            }
            var conflicts: [Int: ImportConflict] = [:]
            for (index, imported) in accounts.enumerated() {
                let account = imported.account
                let exists = uids.contains(account.uid)
                let keys = imported.identities.map { "\($0.providerId)\u{0}\($0.rawId)" }
                if exists && !overwrite {
                    conflicts[index] = .uidExists
                } else if let email = account.email?.lowercased(), let holder = addresses[email], holder != account.uid {
                    conflicts[index] = .emailExists
                } else if let phone = account.phoneNumber, let holder = phones[phone], holder != account.uid {
                    conflicts[index] = .phoneNumberExists
                } else if keys.contains(where: { identities[$0].map { $0 != account.uid } ?? false }) {
                    conflicts[index] = .identityExists
                }
                guard conflicts[index] == nil else { continue }
                if exists {
                    // The replaced account's keys are free for the rest of the batch.
                    if let old = try Self.account(db, uid: account.uid) {
                        if let email = old.email?.lowercased(), addresses[email] == account.uid { addresses[email] = nil }
                        if let phone = old.phoneNumber, phones[phone] == account.uid { phones[phone] = nil }
                    }
                    identities = identities.filter { $0.value != account.uid }
                    try Self.replace(db, account)
                } else {
                    try db.keyChecked(constraint: nil) {
                        try db.executeCached(Self.insertStatement, SQLArguments(named: Records.values(account)))
                    }
                }
                for identity in imported.identities { try Self.insertIdentity(db, identity, uid: account.uid, now: now) }
                uids.insert(account.uid)
                if let email = account.email?.lowercased() { addresses[email] = account.uid }
                if let phone = account.phoneNumber { phones[phone] = account.uid }
                for key in keys { identities[key] = account.uid }
            }
            return conflicts
        }
    }

    /// An import's overwrite: the account replaced whole, its identities with it (the import brings the new ones).
    static func replace(_ db: Session, _ account: Account) throws {
        try db.execute("DELETE FROM federated_identities WHERE uid = ?", [account.uid])
        try db.keyChecked(constraint: nil) { try db.execute(updateStatement, SQLArguments(named: Records.values(account))) }
    }

    /// The values of `column` among `values` that a `SELECT column FROM … WHERE` finds, a thousand at a time.
    static func listed(_ db: Session, _ select: String, column: String, _ values: [String]) throws -> [String] {
        var found: [String] = []
        for start in stride(from: 0, to: values.count, by: 1000) {
            let (listed, arguments) = db.dialect.oneOf(column, Array(values[start..<min(start + 1000, values.count)]))
            found += try db.column("\(select) \(listed)", arguments, as: String.self)
        }
        return found
    }

    public func deleteAccounts(uids: [String], if allowed: (Account) -> Bool) throws -> [String] {
        try write { db in
            var refused: [String] = []
            for uid in uids {
                guard let account = try Self.account(db, uid: uid) else { continue }
                guard allowed(account) else {
                    refused.append(uid)
                    continue
                }
                try db.execute("DELETE FROM accounts WHERE uid = ?", [uid])
                try Self.revokeRefreshTokens(db, uid: uid)
            }
            return refused
        }
    }

    public func replacePasswordHash(uid: String, current: String, with replacement: String, loginAt: Date) throws -> Bool {
        try write { db in
            try db.execute(
                "UPDATE accounts SET password_hash = ?, last_login_at = ? WHERE uid = ? AND password_hash = ?",
                [replacement, loginAt.milliseconds, uid, current]) > 0
        }
    }

    // MARK: - Inside transactions

    /// A deleted account's refresh tokens answer USER_NOT_FOUND from now on, even if the uid is used again.
    static func revokeRefreshTokens(_ db: Session, uid: String) throws {
        try db.execute(
            "UPDATE refresh_tokens SET revoked = ? WHERE uid = ? AND revoked IS NULL", [HeraldError.Code.userNotFound.rawValue, uid])
    }

    static func account(_ db: Session, uid: String) throws -> Account? {
        try db.fetchOne("SELECT * FROM accounts WHERE uid = ?", [uid]).map(Records.account)
    }

    /// Case-insensitive on both engines (SQLite's column is `COLLATE NOCASE`; PostgreSQL's unique index is on
    /// `lower(email)`).
    static func account(_ db: Session, email: String) throws -> Account? {
        try db.fetchOne("SELECT * FROM accounts WHERE \(db.dialect.sameAddress("email", "?"))", [email]).map(Records.account)
    }

    /// - Throws: `EMAIL_EXISTS`, `DUPLICATE_LOCAL_ID` (`AccountKeyRules.admit`).
    static func insert(_ db: Session, _ account: Account) throws {
        let addressHolder = try account.email.flatMap { try Self.account(db, email: $0) }
        try AccountKeyRules.admit(account, addressHolder: addressHolder, uidHolder: try Self.account(db, uid: account.uid))
        try db.keyChecked(constraint: nil) { try db.executeCached(insertStatement, SQLArguments(named: Records.values(account))) }
    }

    static var insertStatement: String {
        """
        INSERT INTO accounts (uid, email, email_verified, password_hash, display_name, disabled, email_link_signin,
                              valid_since, created_at, last_login_at, providers, photo_url, initial_email,
                              custom_attributes, phone_number)
        VALUES (:uid, :email, :email_verified, :password_hash, :display_name, :disabled, :email_link_signin,
                :valid_since, :created_at, :last_login_at, :providers, :photo_url, :initial_email,
                :custom_attributes, :phone_number)
        """
    }

    /// Every column of an account from its values (`Records.values`): a change, or an import's overwrite. An account
    /// read and written back keeps its `created_at`; an overwrite brings its own.
    static var updateStatement: String {
        """
        UPDATE accounts SET email = :email, email_verified = :email_verified, password_hash = :password_hash,
            display_name = :display_name, disabled = :disabled, email_link_signin = :email_link_signin,
            valid_since = :valid_since, created_at = :created_at, last_login_at = :last_login_at, providers = :providers,
            photo_url = :photo_url, initial_email = :initial_email, custom_attributes = :custom_attributes,
            phone_number = :phone_number
        WHERE uid = :uid
        """
    }

    /// Replaces an existing account's fields; an unlink is recorded at `now`.
    /// - Throws: `EMAIL_EXISTS` if its email belongs to another account (`AccountKeyRules.keep`).
    static func update(_ db: Session, _ account: Account, now: Date = Date()) throws {
        try AccountKeyRules.keep(account, addressHolder: try account.email.flatMap { try Self.account(db, email: $0) })
        try db.keyChecked(constraint: nil) { try db.execute(updateStatement, SQLArguments(named: Records.values(account))) }
        // Identities follow the account's providers: one the account no longer lists (unlinked) goes, and the
        // audit records it ('idp-unlink', the provider's raw id as detail).
        let bytewise = db.dialect.bytewise
        let linked = try db.rows(
            "SELECT provider_id, raw_id FROM federated_identities WHERE uid = ? ORDER BY provider_id\(bytewise), raw_id\(bytewise)",
            [account.uid])
        for row in linked {
            let providerID: String = row["provider_id"]
            let rawID: String = row["raw_id"]
            guard !account.providers.contains(providerID) else { continue }
            try db.execute("DELETE FROM federated_identities WHERE provider_id = ? AND raw_id = ?", [providerID, rawID])
            try db.execute(
                "INSERT INTO account_events (uid, kind, provider_id, at, detail) VALUES (?, 'idp-unlink', ?, ?, ?)",
                [account.uid, providerID, now.milliseconds, rawID])
        }
    }
}

extension SQLDialect {
    /// `column` among `addresses`, compared case-insensitively as `sameAddress` compares one.
    func listedAddress(_ column: String, _ addresses: [String]) -> (sql: String, arguments: SQLArguments) {
        switch self {
        case .sqlite: oneOf(column, addresses)
        case .postgres: ("lower(\(column)) IN (SELECT lower(listed) FROM unnest(?::text[]) AS listed)", [addresses])
        }
    }
}

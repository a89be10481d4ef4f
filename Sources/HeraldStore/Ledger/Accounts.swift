import Foundation
import HeraldCore

extension LedgerEngine {
    public func account(uid: String) throws -> Account? {
        try read { db in try Self.account(db, uid: uid) }
    }

    public func account(email: String) throws -> Account? {
        try read { db in try Self.account(db, email: email) }
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
            // Its refresh tokens now answer USER_NOT_FOUND, even if the uid is used again.
            try db.execute(
                "UPDATE refresh_tokens SET revoked = ? WHERE uid = ? AND revoked IS NULL", [HeraldError.Code.userNotFound.rawValue, uid])
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

    // MARK: - Inside transactions

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
        try db.keyChecked(constraint: nil) {
            try db.execute(
                """
                INSERT INTO accounts (uid, email, email_verified, password_hash, display_name, disabled, email_link_signin,
                                      valid_since, created_at, last_login_at, providers, photo_url, initial_email)
                VALUES (:uid, :email, :email_verified, :password_hash, :display_name, :disabled, :email_link_signin,
                        :valid_since, :created_at, :last_login_at, :providers, :photo_url, :initial_email)
                """, SQLArguments(named: Records.values(account)))
        }
    }

    /// Replaces an existing account's fields; an unlink is recorded at `now`.
    /// - Throws: `EMAIL_EXISTS` if its email belongs to another account (`AccountKeyRules.keep`).
    static func update(_ db: Session, _ account: Account, now: Date = Date()) throws {
        try AccountKeyRules.keep(account, addressHolder: try account.email.flatMap { try Self.account(db, email: $0) })
        try db.keyChecked(constraint: nil) {
            try db.execute(
                """
                UPDATE accounts SET email = :email, email_verified = :email_verified, password_hash = :password_hash,
                    display_name = :display_name, disabled = :disabled, email_link_signin = :email_link_signin,
                    valid_since = :valid_since, last_login_at = :last_login_at, providers = :providers,
                    photo_url = :photo_url, initial_email = :initial_email
                WHERE uid = :uid
                """, SQLArguments(named: Records.values(account)))
        }
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

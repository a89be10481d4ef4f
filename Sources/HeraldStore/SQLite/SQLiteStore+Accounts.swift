import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func account(uid: String) throws -> Account? {
        try pool.read { db in try Self.account(db, uid: uid) }
    }

    public func account(email: String) throws -> Account? {
        try pool.read { db in try Self.account(db, email: email) }
    }

    public func standings(emails: [String]) throws -> [String: AccountStanding] {
        guard !emails.isEmpty else { return [:] }
        return try pool.read { db in
            var standings: [String: AccountStanding] = [:]
            // SQLite's default limit on host parameters is 32,766; stay well below it.
            for chunk in stride(from: 0, to: emails.count, by: 10_000).map({ emails[$0..<min($0 + 10_000, emails.count)] }) {
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT email, disabled, email_verified, display_name FROM accounts WHERE email IN (\(marks))",
                    arguments: StatementArguments(Array(chunk)))
                while let row = try rows.next() {
                    let (email, standing) = Records.standing(row)
                    standings[email] = standing
                }
            }
            return standings
        }
    }

    public func createAccount(_ account: Account) throws {
        try pool.write { db in try Self.insert(db, account) }
    }

    public func updateAccount(uid: String, _ change: (inout Account) throws -> Void) throws -> Account {
        try pool.write { db in
            guard var account = try Self.account(db, uid: uid) else { throw HeraldError(.userNotFound, "") }
            try change(&account)
            try Self.update(db, account)
            return account
        }
    }

    public func recordLogin(uid: String, at date: Date) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE accounts SET last_login_at = ? WHERE uid = ?", arguments: [date.milliseconds, uid])
        }
    }

    public func deleteAccount(uid: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM accounts WHERE uid = ?", arguments: [uid])
            guard db.changesCount > 0 else { return false }
            // Its refresh tokens now answer USER_NOT_FOUND, even if the uid is used again.
            try db.execute(
                sql: "UPDATE refresh_tokens SET revoked = ? WHERE uid = ? AND revoked IS NULL",
                arguments: [HeraldError.Code.userNotFound.rawValue, uid])
            return true
        }
    }

    public func createRefreshToken(_ token: RefreshTokenRecord) throws {
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO refresh_tokens (token_hash, uid, provider, issued_at) VALUES (?, ?, ?, ?)",
                arguments: [Data(token.hash), token.uid, token.provider, token.issuedAt.milliseconds])
        }
    }

    public func refreshToken(hash: [UInt8]) throws -> RefreshTokenRecord? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM refresh_tokens WHERE token_hash = ?", arguments: [Data(hash)]).map {
                Records.refreshToken($0, hash: hash)
            }
        }
    }

    public func accounts(limit: Int?) throws -> [Account] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM accounts ORDER BY created_at, uid" + (limit.map { " LIMIT \($0)" } ?? ""))
                .map(Records.account)
        }
    }

    // MARK: - Inside transactions

    static func account(_ db: Database, uid: String) throws -> Account? {
        try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE uid = ?", arguments: [uid]).map(Records.account)
    }

    static func account(_ db: Database, email: String) throws -> Account? {
        try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE email = ?", arguments: [email]).map(Records.account)
    }

    /// - Throws: `EMAIL_EXISTS`, `DUPLICATE_LOCAL_ID`.
    static func insert(_ db: Database, _ account: Account) throws {
        if let email = account.email, try Self.account(db, email: email) != nil {
            throw HeraldError(.emailExists, "")
        }
        if try Self.account(db, uid: account.uid) != nil {
            throw HeraldError(.duplicateLocalID, "")
        }
        try db.execute(
            sql: """
                INSERT INTO accounts (uid, email, email_verified, password_hash, display_name, disabled, email_link_signin,
                                      valid_since, created_at, last_login_at, providers, photo_url, initial_email)
                VALUES (:uid, :email, :email_verified, :password_hash, :display_name, :disabled, :email_link_signin,
                        :valid_since, :created_at, :last_login_at, :providers, :photo_url, :initial_email)
                """, arguments: StatementArguments(Records.values(account)))
    }

    /// Replaces an existing account's fields; an unlink is recorded at `now`.
    /// - Throws: `EMAIL_EXISTS` if its email belongs to another account.
    static func update(_ db: Database, _ account: Account, now: Date = Date()) throws {
        if let email = account.email, let owner = try Self.account(db, email: email), owner.uid != account.uid {
            throw HeraldError(.emailExists, "")
        }
        try db.execute(
            sql: """
                UPDATE accounts SET email = :email, email_verified = :email_verified, password_hash = :password_hash,
                    display_name = :display_name, disabled = :disabled, email_link_signin = :email_link_signin,
                    valid_since = :valid_since, last_login_at = :last_login_at, providers = :providers,
                    photo_url = :photo_url, initial_email = :initial_email
                WHERE uid = :uid
                """, arguments: StatementArguments(Records.values(account)))
        // Identities follow the account's providers: one the account no longer lists (unlinked) goes, and the
        // audit records it ('idp-unlink', the provider's raw id as detail).
        let linked = try Row.fetchAll(db, sql: "SELECT provider_id, raw_id FROM federated_identities WHERE uid = ?", arguments: [account.uid])
        for row in linked where !account.providers.contains(row["provider_id"]) {
            try db.execute(
                sql: "DELETE FROM federated_identities WHERE provider_id = ? AND raw_id = ?", arguments: [row["provider_id"], row["raw_id"]])
            try db.execute(
                sql: "INSERT INTO account_events (uid, kind, provider_id, at, detail) VALUES (?, 'idp-unlink', ?, ?, ?)",
                arguments: [account.uid, row["provider_id"], now.milliseconds, row["raw_id"]])
        }
    }
}

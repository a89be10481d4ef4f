import Foundation
import HeraldCore

extension PostgresStore {
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
            // One array parameter, however many addresses; compared case-insensitively as SQLite's NOCASE did.
            let rows = try db.fetchAll(
                """
                SELECT email, disabled, email_verified, display_name FROM accounts
                WHERE lower(email) IN (SELECT lower(listed) FROM unnest(?::text[]) AS listed)
                """, [emails])
            for row in rows {
                let (email, standing) = Records.standing(row)
                standings[email] = standing
            }
            return standings
        }
    }

    public func createAccount(_ account: Account) throws {
        try pool.write { db in try Self.insert(db, account) }
    }

    public func updateAccount(uid: String, _ change: (inout Account) throws -> Void) throws -> Account {
        // `change` runs again (on the account as then read) if the transaction loses a race and is re-run.
        try pool.write { db in
            guard var account = try Self.account(db, uid: uid) else { throw HeraldError(.userNotFound, "") }
            try change(&account)
            try Self.update(db, account)
            return account
        }
    }

    public func recordLogin(uid: String, at date: Date) throws {
        try pool.write { db in
            try db.execute("UPDATE accounts SET last_login_at = ? WHERE uid = ?", [date.milliseconds, uid])
        }
    }

    public func deleteAccount(uid: String) throws -> Bool {
        try pool.write { db in
            guard try db.execute("DELETE FROM accounts WHERE uid = ?", [uid]) > 0 else { return false }
            // Its refresh tokens now answer USER_NOT_FOUND, even if the uid is used again.
            try db.execute(
                "UPDATE refresh_tokens SET revoked = ? WHERE uid = ? AND revoked IS NULL",
                [HeraldError.Code.userNotFound.rawValue, uid])
            return true
        }
    }

    public func createRefreshToken(_ token: RefreshTokenRecord) throws {
        try pool.write { db in
            try db.execute(
                "INSERT INTO refresh_tokens (token_hash, uid, provider, issued_at) VALUES (?, ?, ?, ?)",
                [Data(token.hash), token.uid, token.provider, token.issuedAt.milliseconds])
        }
    }

    public func refreshToken(hash: [UInt8]) throws -> RefreshTokenRecord? {
        try pool.read { db in
            try db.fetchOne("SELECT * FROM refresh_tokens WHERE token_hash = ?", [Data(hash)]).map { Records.refreshToken($0, hash: hash) }
        }
    }

    public func accounts(limit: Int?) throws -> [Account] {
        try pool.read { db in
            // COLLATE "C": ties ordered bytewise, as SQLite's BINARY collation orders them.
            try db.fetchAll("SELECT * FROM accounts ORDER BY created_at, uid COLLATE \"C\"" + (limit.map { " LIMIT \($0)" } ?? ""))
                .map(Records.account)
        }
    }

    // MARK: - Inside transactions

    static func account(_ db: PostgresSession, uid: String) throws -> Account? {
        try db.fetchOne("SELECT * FROM accounts WHERE uid = ?", [uid]).map(Records.account)
    }

    /// Case-insensitive, as SQLite's `COLLATE NOCASE` column was (the unique index is on `lower(email)`).
    static func account(_ db: PostgresSession, email: String) throws -> Account? {
        try db.fetchOne("SELECT * FROM accounts WHERE lower(email) = lower(?)", [email]).map(Records.account)
    }

    /// - Throws: `EMAIL_EXISTS`, `DUPLICATE_LOCAL_ID`.
    static func insert(_ db: PostgresSession, _ account: Account) throws {
        if let email = account.email, try Self.account(db, email: email) != nil {
            throw HeraldError(.emailExists, "")
        }
        if try Self.account(db, uid: account.uid) != nil {
            throw HeraldError(.duplicateLocalID, "")
        }
        do {
            try db.execute(
                """
                INSERT INTO accounts (uid, email, email_verified, password_hash, display_name, disabled, email_link_signin,
                                      valid_since, created_at, last_login_at, providers, photo_url, initial_email)
                VALUES (:uid, :email, :email_verified, :password_hash, :display_name, :disabled, :email_link_signin,
                        :valid_since, :created_at, :last_login_at, :providers, :photo_url, :initial_email)
                """, SQLArguments(named: Records.values(account)))
        } catch let failure as PostgresFailure where failure.isUniqueViolation {
            throw Self.accountKeyRace(failure)
        }
    }

    /// Replaces an existing account's fields; an unlink is recorded at `now`.
    /// - Throws: `EMAIL_EXISTS` if its email belongs to another account.
    static func update(_ db: PostgresSession, _ account: Account, now: Date = Date()) throws {
        if let email = account.email, let owner = try Self.account(db, email: email), owner.uid != account.uid {
            throw HeraldError(.emailExists, "")
        }
        do {
            try db.execute(
                """
                UPDATE accounts SET email = :email, email_verified = :email_verified, password_hash = :password_hash,
                    display_name = :display_name, disabled = :disabled, email_link_signin = :email_link_signin,
                    valid_since = :valid_since, last_login_at = :last_login_at, providers = :providers,
                    photo_url = :photo_url, initial_email = :initial_email
                WHERE uid = :uid
                """, SQLArguments(named: Records.values(account)))
        } catch let failure as PostgresFailure where failure.isUniqueViolation {
            throw Self.accountKeyRace(failure)
        }
        // Identities follow the account's providers: one the account no longer lists (unlinked) goes, and the
        // audit records it ('idp-unlink', the provider's raw id as detail).
        let linked = try db.fetchAll(
            "SELECT provider_id, raw_id FROM federated_identities WHERE uid = ? ORDER BY provider_id COLLATE \"C\", raw_id COLLATE \"C\"",
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

    /// A unique key of `accounts` (uid or lower(email)) was refused although the checks before the statement found
    /// it free: another transaction committed it after this one's snapshot. SQLite's single writer would have run
    /// this transaction after that one, so ask the pool to run it again (as a serialization failure); the checks
    /// then see the row and throw `EMAIL_EXISTS` / `DUPLICATE_LOCAL_ID` as SQLite does.
    static func accountKeyRace(_ failure: PostgresFailure) -> PostgresFailure {
        PostgresFailure(
            sqlState: "40001", message: "a concurrent transaction took the key: \(failure.message)", detail: failure.detail,
            constraint: failure.constraint)
    }
}

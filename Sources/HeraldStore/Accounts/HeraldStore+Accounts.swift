import Foundation
import GRDB
import HeraldCore

extension HeraldStore {
    /// The account with this uid, or nil.
    public func account(uid: String) throws -> Account? {
        try pool.read { db in try Self.account(db, uid: uid) }
    }

    /// The account with this email (case-insensitive), or nil.
    public func account(email: String) throws -> Account? {
        try pool.read { db in try Self.account(db, email: email) }
    }

    public static func account(_ db: Database, uid: String) throws -> Account? {
        try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE uid = ?", arguments: [uid]).map(Account.init(row:))
    }

    public static func account(_ db: Database, email: String) throws -> Account? {
        try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE email = ?", arguments: [email]).map(Account.init(row:))
    }

    /// Inserts a new account; throws `EMAIL_EXISTS` when the email is taken.
    public func create(_ account: Account) throws {
        try pool.write { db in try Self.insert(db, account) }
    }

    public static func insert(_ db: Database, _ account: Account) throws {
        if let email = account.email, try Self.account(db, email: email) != nil {
            throw HeraldError(.emailExists, "")
        }
        if try Self.account(db, uid: account.uid) != nil {
            throw HeraldError(.duplicateLocalID, "")
        }
        try db.execute(
            sql: """
                INSERT INTO accounts (uid, email, email_verified, password_hash, display_name, disabled, email_link_signin,
                                      valid_since, created_at, last_login_at, providers)
                VALUES (:uid, :email, :email_verified, :password_hash, :display_name, :disabled, :email_link_signin,
                        :valid_since, :created_at, :last_login_at, :providers)
                """, arguments: account.arguments)
    }

    /// Replaces an existing account's fields; throws `EMAIL_EXISTS` if its new email belongs to another account.
    public func update(_ account: Account) throws {
        try pool.write { db in try Self.update(db, account) }
    }

    public static func update(_ db: Database, _ account: Account) throws {
        if let email = account.email, let owner = try Self.account(db, email: email), owner.uid != account.uid {
            throw HeraldError(.emailExists, "")
        }
        try db.execute(
            sql: """
                UPDATE accounts SET email = :email, email_verified = :email_verified, password_hash = :password_hash,
                    display_name = :display_name, disabled = :disabled, email_link_signin = :email_link_signin,
                    valid_since = :valid_since, last_login_at = :last_login_at, providers = :providers
                WHERE uid = :uid
                """, arguments: account.arguments)
    }

    /// Sets only `last_login_at`, so a concurrent reset or revocation is never overwritten by a stale row.
    public func recordLogin(uid: String, at date: Date) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE accounts SET last_login_at = ? WHERE uid = ?", arguments: [date.milliseconds, uid])
        }
    }

    /// Deletes an account; returns false when there was none.
    @discardableResult
    public func deleteAccount(uid: String) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM accounts WHERE uid = ?", arguments: [uid])
            return db.changesCount > 0
        }
    }

    /// All accounts, oldest first.
    public func accounts(limit: Int? = nil) throws -> [Account] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM accounts ORDER BY created_at, uid" + (limit.map { " LIMIT \($0)" } ?? ""))
                .map(Account.init(row:))
        }
    }

    /// Runs `body` in one write transaction, for read-modify-write of accounts.
    public func transaction<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }
}

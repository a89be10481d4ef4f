import Foundation
import GRDB
import HeraldCore

/// The embedded ledger: SQLite in WAL mode through GRDB, behind the `HeraldStore` protocols.
///
/// Safe to share between threads and processes; every write is one short IMMEDIATE transaction.
///
/// ```swift
/// let store = try SQLiteStore(path: "var/herald.sqlite")
/// let id = try store.enqueue(request, messageDomain: "example.com")
/// ```
public final class SQLiteStore: HeraldStore {
    let pool: DatabasePool

    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    public init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw HeraldError(.invalidConfiguration, "database \(path): cannot create \(directory): \(error.localizedDescription)")
            }
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -32768")  // 32 MiB of pages: big imports keep their indexes in memory
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try SQLiteMigrations.migrator.migrate(pool)
        } catch let error as DatabaseError {
            throw HeraldError(.invalidConfiguration, "database \(path): \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// Writes in one IMMEDIATE transaction whose commit is fsynced (`synchronous = FULL`).
    ///
    /// The ledger otherwise runs WAL with `synchronous = NORMAL`: a commit survives a process crash
    /// but may be lost on power failure. Acknowledged requests must survive both, so enqueueing
    /// uses this; worker bookkeeping does not need to (a lost record means a resend, never a loss).
    func writeDurably<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    /// Reads inside a snapshot; for ledger queries and tests.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }
}

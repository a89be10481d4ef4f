import Foundation
import HeraldCore

/// The PostgreSQL ledger's migration runner: the PostgreSQL steps of `LedgerMigration.all`, each recorded by name in
/// `herald_migrations`. The schema itself lives in Ledger/Migrations.swift.
enum PostgresMigrations {
    /// Applies the migrations not yet applied, each in one transaction, under an advisory lock so that two
    /// processes starting on a new ledger take turns.
    static func migrate(_ pool: PostgresPool) throws {
        try pool.withSession { session in
            if let schema = pool.location.schema { try session.execute("CREATE SCHEMA IF NOT EXISTS \(schema)") }
            try session.execute("SELECT pg_advisory_lock(7260218)")
            defer { _ = try? session.execute("SELECT pg_advisory_unlock(7260218)") }
            try session.execute(
                "CREATE TABLE IF NOT EXISTS herald_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)")
            let applied = Set(try session.fetchColumn("SELECT name FROM herald_migrations", as: String.self))
            for migration in LedgerMigration.all.compactMap(\.postgres) where !applied.contains(migration.name) {
                try session.execute("BEGIN")
                do {
                    for statement in migration.statements { try session.execute(statement) }
                    try session.execute(
                        "INSERT INTO herald_migrations (name, applied_at) VALUES (?, ?)", [migration.name, Date().milliseconds])
                    try session.execute("COMMIT")
                } catch {
                    _ = try? session.execute("ROLLBACK")
                    throw error
                }
            }
        }
    }
}

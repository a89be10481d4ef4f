import Foundation
import HeraldCore

/// The PostgreSQL ledger's migration runner: the PostgreSQL steps of `LedgerMigration.all`, each recorded by name in
/// `herald_migrations`. The schema itself lives in Ledger/Migrations.swift.
enum PostgresMigrations {
    /// Applies the migrations not yet applied, each in one transaction, under an advisory lock so that two
    /// processes starting on a new ledger take turns.
    static func migrate(_ pool: PostgresPool) throws {
        try pool.withSession { session in
            // Building an index on a large ledger, or waiting for another process's migrations, may take longer
            // than any request should: this session alone waits as long as it takes.
            session.answerTimeout = 24 * 3600
            try session.execute("SET statement_timeout = 0")
            try session.execute("SET lock_timeout = 0")
            defer {
                _ = try? session.execute("RESET statement_timeout")
                _ = try? session.execute("RESET lock_timeout")
                session.answerTimeout = pool.timeouts.answer
            }
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

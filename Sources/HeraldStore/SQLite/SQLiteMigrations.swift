import GRDB

/// The SQLite ledger's migrator: the SQLite steps of `LedgerMigration.all`, registered with GRDB under the names it
/// records in `grdb_migrations`. The schema itself lives in Ledger/Migrations.swift.
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for step in LedgerMigration.all.compactMap(\.sqlite) {
            migrator.registerMigration(step.name) { db in
                // Dropping a rebuilt table drops its counter, and the new table's counter starts from the ids copied
                // into it: the old counter is put back so that AUTOINCREMENT still never reuses an id.
                let sequence = try step.keepsSequence.flatMap { table in
                    try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [table])
                }
                for statement in step.statements { try db.execute(sql: statement) }
                if let table = step.keepsSequence, let sequence {
                    try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = ?", arguments: [table])
                    try db.execute(sql: "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", arguments: [table, sequence])
                }
            }
        }
        return migrator
    }
}

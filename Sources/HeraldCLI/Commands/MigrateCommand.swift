import ArgumentParser
import HeraldCore
import HeraldStore

/// `herald migrate`: creates or upgrades the ledger; with `--from sqlite:PATH`, copies a SQLite ledger into the
/// PostgreSQL one `database.url` names.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Create or upgrade the ledger (SQLite or PostgreSQL), or copy a SQLite ledger into PostgreSQL.")

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("from"), help: "Copy this SQLite ledger (sqlite:PATH) into the empty PostgreSQL ledger database.url names.")
    var source: String?

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let store = try runtime.openStore()
            let target = StoreOpener.describe(runtime.configuration.database)
            guard let source else {
                print("database \(target) is up to date")
                return
            }
            guard source.hasPrefix("sqlite:"), source.count > "sqlite:".count else {
                throw HeraldError(.invalidConfiguration, "--from: expected sqlite:PATH, got \(source)")
            }
            guard let postgres = store as? PostgresStore else {
                throw HeraldError(.invalidConfiguration, "--from copies into PostgreSQL: set database.url to a postgres:// URL")
            }
            let path = String(source.dropFirst("sqlite:".count))
            // A mistyped path must not become a new, empty ledger that copies "successfully".
            try PostgresStore.requireSQLiteFile(path)
            // Bring the SQLite ledger to this version's schema first, so every column it copies exists on both sides.
            _ = try SQLiteStore(path: path)
            let report = try postgres.copy(fromSQLite: path)
            for (table, rows) in report.tables where rows > 0 { print("\(table): \(rows) rows") }
            print("copied \(report.total) rows from \(path) into \(target); every table's count matches")
        }
    }
}

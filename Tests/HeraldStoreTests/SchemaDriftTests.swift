import Foundation
import HeraldTesting
import Testing

@testable import HeraldStore

/// The two engines' ledgers are one schema: `LedgerMigration.all` gives each engine its own DDL, and these tests fail
/// when a table or a column reaches one engine and not the other, or when a migration an existing ledger has
/// recorded is renamed (it would run again).
@Suite struct SchemaDriftTests {
    let scratch = ScratchDirectory()

    /// Tables only one engine has, on purpose: the engine's own machinery, not the ledger's data.
    static let engineOnlyTables: [StoreKind: Set<String>] = [
        // Send slots every process shares (`SharedRateLimits`: worker.maxRate across hosts). A SQLite ledger has one
        // host, whose workers pace themselves in memory.
        // The outbox tallies' deltas, appended by statement triggers so that concurrent writers never wait on one
        // tally row, and folded into `outbox_tallies` by the workers. SQLite's triggers update the tallies in place.
        // The rollups' deltas likewise (`rollup_deltas`, folded into `rollups`).
        .postgres: ["rate_slots", "outbox_tally_deltas", "rollup_deltas"]
    ]

    /// Column types, as the engines spell the same one (`LedgerMigration`'s documentation).
    static let typeFamilies: [String: String] = [
        "INTEGER": "integer", "bigint": "integer",
        "TEXT": "text", "text": "text",
        "REAL": "real", "double precision": "real",
        "BLOB": "blob", "bytea": "blob",
    ]

    @Test(.enabled(if: StoreKind.allCases.contains(.postgres), "needs HERALD_TEST_POSTGRES"))
    func freshLedgersOnBothEnginesHaveTheSameTablesColumnsAndColumnTypes() throws {
        let sqlite = try SQLiteStore(path: scratch.path("fresh.sqlite"))
        // Bookkeeping left out: GRDB's grdb_migrations, SQLite's sqlite_sequence (and any other sqlite_ table).
        let sqliteColumns = try sqlite.read { db in
            try Self.columns(
                db,
                """
                SELECT m.name AS table_name, c.name AS column_name, c.type AS type
                FROM sqlite_schema m, pragma_table_info(m.name) c
                WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'grdb_migrations'
                """)
        }
        let postgres = try #require(try StoreKind.postgres.makeStore(in: scratch, name: "fresh") as? PostgresStore)
        // Bookkeeping left out: herald_migrations, the PostgreSQL runner's record of applied migrations.
        let postgresColumns = try postgres.read { db in
            try Self.columns(
                db,
                """
                SELECT c.table_name::text AS table_name, c.column_name::text AS column_name, c.data_type::text AS type
                FROM information_schema.columns c
                JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.table_name <> 'herald_migrations'
                """)
        }
        #expect(!sqliteColumns.isEmpty && !postgresColumns.isEmpty)

        let sqliteTables = Set(sqliteColumns.map(\.table)).subtracting(Self.engineOnlyTables[.sqlite, default: []])
        let postgresTables = Set(postgresColumns.map(\.table)).subtracting(Self.engineOnlyTables[.postgres, default: []])
        #expect(sqliteTables.subtracting(postgresTables).sorted() == [], "tables only SQLite's ledger has")
        #expect(postgresTables.subtracting(sqliteTables).sorted() == [], "tables only PostgreSQL's ledger has")
        for (kind, tables) in Self.engineOnlyTables {
            let have = Set((kind == .sqlite ? sqliteColumns : postgresColumns).map(\.table))
            #expect(tables.isSubset(of: have), "\(kind)'s own tables are still there: drop them from engineOnlyTables if not")
        }

        let shared = sqliteTables.intersection(postgresTables)
        let sqliteNames = Set(sqliteColumns.filter { shared.contains($0.table) }.map(\.qualifiedName))
        let postgresNames = Set(postgresColumns.filter { shared.contains($0.table) }.map(\.qualifiedName))
        #expect(sqliteNames.subtracting(postgresNames).sorted() == [], "columns only SQLite's ledger has")
        #expect(postgresNames.subtracting(sqliteNames).sorted() == [], "columns only PostgreSQL's ledger has")

        // The same column holds the same kind of value on both (`herald migrate --from sqlite:` copies one into the other).
        let postgresTypes = Dictionary(uniqueKeysWithValues: postgresColumns.map { ($0.qualifiedName, $0.type) })
        for column in sqliteColumns where shared.contains(column.table) {
            guard let postgresType = postgresTypes[column.qualifiedName] else { continue }
            let family = Self.typeFamilies[column.type]
            #expect(family != nil, "\(column.qualifiedName): SQLite type \(column.type) has no PostgreSQL counterpart here")
            #expect(
                family == Self.typeFamilies[postgresType],
                "\(column.qualifiedName): \(column.type) on SQLite, \(postgresType) on PostgreSQL")
        }
    }

    /// Ledgers record each migration by name: a renamed one would run again on every ledger that has it, so these
    /// names are frozen. New migrations are appended, under one name both engines record.
    @Test func migrationNamesExistingLedgersHaveRecordedDoNotChange() {
        let history = LedgerMigration.all
        let sqlite = history.compactMap(\.sqlite?.name)
        let postgres = history.compactMap(\.postgres?.name)
        #expect(
            Array(sqlite.prefix(18)) == [
                "v1: outbox, action codes, delivery attempts",
                "v2: index for expiring stale queued mail",
                "v3: accounts and link events",
                "v4: campaigns",
                "v5: codes remember their continue URL",
                "v6: refresh tokens, profile photo, initial email",
                "v7: worker heartbeats, claim owners, queue lifetime, bulk idempotency",
                "v8: abuse limits, suppressed requests, aggregated unknown-code visits",
                "v9: identity providers linked to accounts, and account events",
                "v10: no index on outbox.state",
                "v11: no index on outbox.claimed_by",
                "v12: campaign rows skip the indexes only single sends need; lookups by email use an index",
                "v13: bounced and complained rows; the suppression list; bounces, complaints and unsubscribes",
                "v14: operators' retries and cancels",
                "v15: webhook deliveries",
                "v16: a retried row keeps its first queue time",
                "v17: a code's family is found through its outbox row",
                "v18: possibly delivered messages",
            ])
        #expect(
            Array(postgres.prefix(3)) == [
                "v1: the ledger", "v2: a code's family is found through its outbox row", "v18: possibly delivered messages",
            ])
        #expect(Set(sqlite).count == sqlite.count && Set(postgres).count == postgres.count, "names are unique per engine")
        #expect(history.allSatisfy { $0.sqlite != nil || $0.postgres != nil })
        #expect(history.allSatisfy { $0.postgres?.keepsSequence == nil }, "keepsSequence is SQLite's")
    }

    @Test func aFreshSQLiteLedgerRecordsEveryMigrationUnderItsName() throws {
        let sqlite = try SQLiteStore(path: scratch.path("names.sqlite"))
        let recorded = try sqlite.read { db in try db.column("SELECT identifier FROM grdb_migrations", as: String.self) }
        #expect(Set(recorded) == Set(LedgerMigration.all.compactMap(\.sqlite?.name)))
    }

    struct SchemaColumn {
        let table: String
        let name: String
        /// As the engine reports it: SQLite's declared type, PostgreSQL's `data_type`.
        let type: String
        var qualifiedName: String { "\(table).\(name)" }
    }

    /// The rows of a query naming `table_name`, `column_name` and `type`.
    static func columns(_ db: some LedgerSession, _ sql: String) throws -> [SchemaColumn] {
        try db.rows(sql).map { SchemaColumn(table: $0["table_name"], name: $0["column_name"], type: $0["type"]) }
    }
}

import Foundation
import GRDB
import HeraldTesting

@testable import HeraldStore

/// A look under the store protocols, for the tests that check what a table holds or break one on purpose.
extension StoreKind {
    /// The rows of `sql` on the ledger `name` in `scratch`, each column as text (integers in decimal) or nil.
    func rows(in scratch: ScratchDirectory, name: String = "ledger", _ sql: String) throws -> [[String: String?]] {
        switch self {
        case .sqlite:
            return try DatabaseQueue(path: scratch.path("\(name).sqlite")).read { db in
                try Row.fetchAll(db, sql: sql).map { row in
                    Dictionary(uniqueKeysWithValues: row.columnNames.map { ($0, Self.text(row[$0] as DatabaseValue)) })
                }
            }
        case .postgres:
            let pool = try PostgresPool(location: try Self.postgresLocation(scratch.path(name)), size: 1)
            return try pool.read { db in
                try db.fetchAll(sql).map { row in
                    Dictionary(uniqueKeysWithValues: row.columnNames.map { ($0, row[$0] as String?) })
                }
            }
        }
    }

    private static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .null: nil
        case .int64(let v): String(v)
        case .double(let v): String(v)
        case .string(let v): v
        case .blob(let v): v.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Runs `sqlite` or `postgres` (statements separated by a line holding only `;`) on the ledger `name`.
    func execute(in scratch: ScratchDirectory, name: String = "ledger", sqlite: String, postgres: String) throws {
        switch self {
        case .sqlite:
            try DatabaseQueue(path: scratch.path("\(name).sqlite")).write { db in try db.execute(sql: sqlite) }
        case .postgres:
            let pool = try PostgresPool(location: try Self.postgresLocation(scratch.path(name)), size: 1)
            try pool.write { db in
                for statement in postgres.components(separatedBy: "\n;\n") { try db.execute(statement) }
            }
        }
    }
}

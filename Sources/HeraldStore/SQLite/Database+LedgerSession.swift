import Foundation
import GRDB

/// GRDB's connection is the SQLite engine's `LedgerSession`.
extension Database: LedgerSession {
    var dialect: SQLDialect { .sqlite }

    func execute(_ sql: String, _ arguments: SQLArguments) throws -> Int {
        try execute(sql: sql, arguments: StatementArguments(arguments))
        return changesCount
    }

    func fetchAll(_ sql: String, _ arguments: SQLArguments) throws -> [Row] {
        try Row.fetchAll(self, sql: sql, arguments: StatementArguments(arguments))
    }

    func fetchOne(_ sql: String, _ arguments: SQLArguments) throws -> Row? {
        try Row.fetchOne(self, sql: sql, arguments: StatementArguments(arguments))
    }

    func executeCached(_ sql: String, _ arguments: SQLArguments) throws -> Int {
        try cachedStatement(sql: sql).execute(arguments: StatementArguments(arguments))
        return changesCount
    }

    func fetchAllCached(_ sql: String, _ arguments: SQLArguments) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: StatementArguments(arguments))
    }

    func fetchOneCached(_ sql: String, _ arguments: SQLArguments) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: StatementArguments(arguments))
    }

    func withSavepoint<T>(_ body: () throws -> T) throws -> T {
        var result: T?
        try inSavepoint {
            result = try body()
            return .commit
        }
        guard let result else { preconditionFailure("a savepoint committed without running its body") }
        return result
    }

    func keyChecked<T>(constraint: String?, _ body: () throws -> T) throws -> T { try body() }
}

extension StatementArguments {
    /// Arguments built by shared code: positional, or named.
    init(_ arguments: SQLArguments) {
        if arguments.named.isEmpty {
            self.init(arguments.positional.map { $0 as (any DatabaseValueConvertible)? })
        } else {
            self.init(arguments.named)
        }
    }
}

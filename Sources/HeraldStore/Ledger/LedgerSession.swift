import Foundation

/// One transaction's connection as the ledger's shared operations see it: GRDB's `Database` on SQLite,
/// `PostgresSession` on PostgreSQL.
///
/// Statements take `?` (in order) and `:name` placeholders on both engines; where the two spell a thing
/// differently, the statement asks `dialect`.
///
/// ```swift
/// let live = try db.fetchOne("SELECT * FROM action_codes WHERE code_hash = ?", [hash])
/// ```
protocol LedgerSession {
    associatedtype Row: LedgerRow

    var dialect: SQLDialect { get }

    /// Runs one statement; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: SQLArguments) throws -> Int

    func fetchAll(_ sql: String, _ arguments: SQLArguments) throws -> [Row]

    func fetchOne(_ sql: String, _ arguments: SQLArguments) throws -> Row?

    /// `execute` through a statement the connection keeps prepared (GRDB's `cachedStatement` on SQLite;
    /// PostgreSQL's sessions run it as any other), for the statements of hot paths. Never for SQL built anew
    /// each time (an `IN` list): the cache keeps every text it sees.
    @discardableResult
    func executeCached(_ sql: String, _ arguments: SQLArguments) throws -> Int

    /// `fetchAll` through a statement the connection keeps prepared.
    func fetchAllCached(_ sql: String, _ arguments: SQLArguments) throws -> [Row]

    /// `fetchOne` through a statement the connection keeps prepared.
    func fetchOneCached(_ sql: String, _ arguments: SQLArguments) throws -> Row?

    /// Runs `body` in a savepoint: if it throws, only its own changes are undone and the error passes on.
    func withSavepoint<T>(_ body: () throws -> T) throws -> T

    /// Runs `body`, a write that a unique key (`constraint`, or any when nil) may refuse although the reads before
    /// it found the key free. On PostgreSQL another transaction committed the key after this one's snapshot: the
    /// refusal becomes a serialization failure, so the transaction runs again and its reads then see the row (as
    /// SQLite's single writer would have run it after that one). On SQLite the reads saw every commit.
    @discardableResult
    func keyChecked<T>(constraint: String?, _ body: () throws -> T) throws -> T
}

extension LedgerSession {
    /// The rows of a statement, read by column name (`row["id"] as Int64`).
    func rows(_ sql: String, _ arguments: SQLArguments = []) throws -> [RecordRow<Row>] {
        try fetchAll(sql, arguments).map { RecordRow($0) }
    }

    /// The first row of a statement, read by column name.
    func row(_ sql: String, _ arguments: SQLArguments = []) throws -> RecordRow<Row>? {
        try fetchOne(sql, arguments).map { RecordRow($0) }
    }

    /// The first column of the first row, or nil when there is no row or it is NULL.
    func value<Value: LedgerValue>(_ sql: String, _ arguments: SQLArguments = [], as type: Value.Type = Value.self) throws -> Value? {
        try fetchOne(sql, arguments).flatMap { $0.value(at: 0) as Value? }
    }

    /// The first column of every row (NULLs skipped).
    func column<Value: LedgerValue>(_ sql: String, _ arguments: SQLArguments = [], as type: Value.Type = Value.self) throws -> [Value] {
        try fetchAll(sql, arguments).compactMap { $0.value(at: 0) as Value? }
    }

    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments = []) throws -> Int {
        try execute(sql, arguments)
    }
}

import Foundation
import GRDB
import GRDBSQLite

/// One of GRDB's cached statements, bound and run through SQLite's C API.
///
/// For bulk inserts: `StatementArguments` boxes every value as an existential and converts it to a
/// `DatabaseValue` before binding: 14 % of a million-row campaign import's perf samples. Values bound here go
/// straight to `sqlite3_bind_*` and stay bound across runs until bound again. Use it inside a GRDB write, or on a
/// connection of `QuickReads` (which GRDB does not know), and bind every parameter before its first run: the cached
/// statement may hold earlier values.
struct BoundStatement {
    private let handle: OpaquePointer
    private let connection: OpaquePointer?
    private let sql: String

    init(_ db: Database, sql: String) throws {
        handle = try db.cachedStatement(sql: sql).sqliteStatement
        connection = db.sqliteConnection
        self.sql = sql
    }

    /// A statement prepared on a connection of `QuickReads`.
    init(handle: OpaquePointer, connection: OpaquePointer, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    func bind(_ index: Int32, _ text: String?) {
        guard var text else { return bindNull(index) }
        text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                // An empty buffer may have no address; SQLite reads a null pointer as NULL, not as "".
                _ = sqlite3_bind_text(handle, index, chars.baseAddress ?? Self.empty, Int32(chars.count), Self.transient)
            }
        }
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            _ = sqlite3_bind_blob(handle, index, raw.baseAddress ?? UnsafeRawPointer(Self.empty), Int32(raw.count), Self.transient)
        }
    }

    func bind(_ index: Int32, _ value: Int64?) {
        guard let value else { return bindNull(index) }
        sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: Double?) {
        guard let value else { return bindNull(index) }
        sqlite3_bind_double(handle, index, value)
    }

    private func bindNull(_ index: Int32) {
        sqlite3_bind_null(handle, index)
    }

    /// Runs the statement to its end with the values bound now; returns the rows it changed.
    @discardableResult
    func run() throws -> Int {
        defer { sqlite3_reset(handle) }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_DONE: return Int(sqlite3_changes(connection))
            case SQLITE_ROW: continue
            case let code: throw failure(code)
            }
        }
    }

    /// The first row of the statement, with the values bound now, its columns copied by name (nil when there is none);
    /// it is not run further.
    func firstRow() throws -> Row? {
        defer { sqlite3_reset(handle) }
        switch sqlite3_step(handle) {
        case SQLITE_ROW:
            var columns: [String: any DatabaseValueConvertible] = [:]
            for index in 0..<sqlite3_column_count(handle) {
                let name = String(cString: sqlite3_column_name(handle, index))
                switch sqlite3_column_type(handle, index) {
                case SQLITE_INTEGER: columns[name] = sqlite3_column_int64(handle, index)
                case SQLITE_FLOAT: columns[name] = sqlite3_column_double(handle, index)
                case SQLITE_TEXT: columns[name] = String(cString: sqlite3_column_text(handle, index))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(handle, index))
                    columns[name] = count == 0 ? Data() : Data(bytes: sqlite3_column_blob(handle, index), count: count)
                default: columns[name] = DatabaseValue.null
                }
            }
            return Row(columns)
        case SQLITE_DONE: return nil
        case let code: throw failure(code)
        }
    }

    private func failure(_ code: Int32) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }

    /// SQLite copies the bytes before `sqlite3_bind_text` returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self) }
    private static var empty: UnsafePointer<CChar> { UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self) }
}

/// Rows inserted by multi-row `INSERT … VALUES (…), (…)` statements of a few fixed sizes (64, 16, 4 and 1 rows,
/// each one of GRDB's cached statements): per row, a tenth of the statement overhead of one `INSERT` each, and a
/// table with `AUTOINCREMENT` reads and writes `sqlite_sequence` once per statement instead of once per row.
struct MultiRowInsert {
    private let prefix: String
    private let columns: Int
    private let tuple: String
    static let sizes = [64, 16, 4, 1]

    /// `prefix`: `INSERT INTO t (a, b, c) VALUES `; `columns`: how many values each row binds.
    init(_ prefix: String, columns: Int) {
        self.prefix = prefix
        self.columns = columns
        tuple = "(" + Array(repeating: "?", count: columns).joined(separator: ",") + ")"
    }

    /// Inserts `count` rows; `bind(statement, row, firstIndex)` binds row `row`'s values from parameter `firstIndex`
    /// on. Returns each row's rowid, in order: one statement's rows take consecutive ids (the table's `AUTOINCREMENT`
    /// or largest rowid plus one, row by row, and the calling transaction is the only writer).
    @discardableResult
    func run(_ db: Database, count: Int, bind: (BoundStatement, Int, Int32) -> Void) throws -> [Int64] {
        var rowIDs: [Int64] = []
        rowIDs.reserveCapacity(count)
        while rowIDs.count < count {
            let done = rowIDs.count
            let size = Self.sizes.first { $0 <= count - done }!
            let statement = try BoundStatement(db, sql: prefix + Array(repeating: tuple, count: size).joined(separator: ","))
            for row in 0..<size { bind(statement, done + row, Int32(row * columns + 1)) }
            try statement.run()
            let last = db.lastInsertedRowID
            rowIDs += (last - Int64(size) + 1)...last
        }
        return rowIDs
    }
}

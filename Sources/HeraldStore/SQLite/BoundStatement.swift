import GRDB
import GRDBSQLite

/// One of GRDB's cached statements, bound and run through SQLite's C API.
///
/// For bulk inserts: `StatementArguments` boxes every value as an existential and converts it to a
/// `DatabaseValue` before binding: 14 % of a million-row campaign import's perf samples. Values bound here go
/// straight to `sqlite3_bind_*` and stay bound across runs until bound again. Use it inside a GRDB write
/// and only there, and bind every parameter before its first run: the cached statement may hold earlier values.
struct BoundStatement {
    private let handle: OpaquePointer
    private let connection: OpaquePointer?
    private let sql: String

    init(_ db: Database, sql: String) throws {
        handle = try db.cachedStatement(sql: sql).sqliteStatement
        connection = db.sqliteConnection
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
            case let code:
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
            }
        }
    }

    /// SQLite copies the bytes before `sqlite3_bind_text` returns.
    private static var transient: sqlite3_destructor_type { unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self) }
    private static var empty: UnsafePointer<CChar> { UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self) }
}

import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Lookups of one statement and one row, asked on read-only connections of their own through SQLite's C API.
///
/// Every `sendOobCode` asks whether its address is suppressed, and the answer is almost always no. Through GRDB's
/// reader pool that one indexed lookup cost a ninth of the request's CPU: taking a reader from the pool (a barrier
/// on a dispatch queue, a semaphore, a scan for a reader the thread already holds) and a dispatch hop onto the
/// reader's queue, contended by every request in flight. Here a connection is taken from a locked list, its cached
/// statement bound and stepped on the caller's thread, and the connection put back.
///
/// A statement run by itself reads one snapshot, the newest committed one, as GRDB's `unsafeRead` does.
/// `@unchecked Sendable`: a connection and its statements are used by one thread at a time, the one that took it
/// from `idle`, which `Mutex` guards.
final class QuickReads: @unchecked Sendable {
    private final class Connection: @unchecked Sendable {
        let handle: OpaquePointer
        private var statements: [String: OpaquePointer] = [:]

        init(handle: OpaquePointer) { self.handle = handle }

        deinit {
            for statement in statements.values { sqlite3_finalize(statement) }
            sqlite3_close_v2(handle)
        }

        func statement(_ sql: String) throws -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            var statement: OpaquePointer?
            let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard code == SQLITE_OK, let statement else { throw QuickReads.error(code, handle, sql) }
            statements[sql] = statement
            return statement
        }
    }

    /// Connections kept open between questions; more are opened while more threads ask at once, and closed after.
    static let idleLimit = 8

    private let path: String
    private let busyTimeout: Int32
    private let idle = Mutex<[Connection]>([])

    init(path: String, busyTimeout: TimeInterval) {
        self.path = path
        self.busyTimeout = Int32(clamping: Int(busyTimeout * 1000))
    }

    /// The first row `sql` returns (with `?` parameters bound to `text` and `number`, in that order), its columns
    /// copied; nil when it returns none.
    func firstRow(_ sql: String, text: String, number: Int64) throws -> Row? {
        let connection = try idle.withLock { $0.popLast() } ?? open()
        defer {
            idle.withLock { connections in
                if connections.count < Self.idleLimit { connections.append(connection) }
            }
        }
        let statement = BoundStatement(handle: try connection.statement(sql), connection: connection.handle, sql: sql)
        statement.bind(1, text)
        statement.bind(2, number)
        return try statement.firstRow()
    }

    private func open() throws -> Connection {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let error = Self.error(code, handle, nil)
            sqlite3_close_v2(handle)
            throw error
        }
        sqlite3_busy_timeout(handle, busyTimeout)
        return Connection(handle: handle)
    }

    /// A GRDB error, so that `LedgerPool.translating` reads a busy or unreadable ledger as UNAVAILABLE.
    private static func error(_ code: Int32, _ handle: OpaquePointer?, _ sql: String?) -> DatabaseError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
    }
}

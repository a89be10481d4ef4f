import Foundation
import GRDB
import HeraldCore

/// The GRDB pool behind `SQLiteStore`, with SQLite's passing failures translated to `UNAVAILABLE`.
///
/// Busy and locked databases, I/O errors, a full disk, a read-only file or one that cannot be opened
/// right now are conditions that end by themselves; callers retry them (the worker) or answer 503
/// (the API). Every other error passes unchanged.
struct LedgerPool: Sendable {
    let base: DatabasePool

    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try Self.translating { try base.write(updates) }
    }

    func writeWithoutTransaction<T>(_ updates: (Database) throws -> T) throws -> T {
        try Self.translating { try base.writeWithoutTransaction(updates) }
    }

    func read<T>(_ value: (Database) throws -> T) throws -> T {
        try Self.translating { try base.read(value) }
    }

    /// Reads outside a transaction, for a body of one statement: a statement sees one snapshot by itself, and the
    /// `BEGIN` and `COMMIT` a snapshot read adds (each parsed anew) cost more than an indexed lookup. Never for a
    /// body of several statements that must agree.
    func readOneStatement<T>(_ value: (Database) throws -> T) throws -> T {
        try Self.translating { try base.unsafeRead(value) }
    }

    /// - Parameter opening: while opening, a file that cannot be opened is a configuration problem, not a passing one.
    static func translating<T>(opening: Bool = false, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where isPassing(error.resultCode) && !(opening && error.resultCode.primaryResultCode == .SQLITE_CANTOPEN) {
            // Out of descriptors, SQLite says only that it cannot open a file (or an I/O error): name the cause.
            let cause =
                [.SQLITE_CANTOPEN, .SQLITE_IOERR].contains(error.resultCode.primaryResultCode) && FileDescriptors.exhausted()
                ? FileDescriptors.exhaustion : error.message ?? "\(error.resultCode)"
            throw HeraldError(.unavailable, "ledger unavailable: \(cause)")
        }
    }

    /// Result codes of conditions that pass: retry later rather than give up.
    static func isPassing(_ code: ResultCode) -> Bool {
        [.SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_IOERR, .SQLITE_FULL, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PROTOCOL, .SQLITE_NOMEM]
            .contains(code.primaryResultCode)
    }
}

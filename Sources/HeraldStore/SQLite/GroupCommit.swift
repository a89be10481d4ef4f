import Foundation
import GRDB

/// Durable writes from many threads, committed together: one transaction and one fsync for every
/// write waiting, each caller answered only once that commit is on disk.
///
/// The first caller to find no commit under way leads: it takes every write waiting, runs each in a
/// savepoint of one IMMEDIATE transaction (a write that throws is rolled back alone and its caller
/// gets the error), commits with `synchronous = FULL`, and wakes the callers. Writes arriving during
/// that commit wait for it and share the next, so batches grow with the load and a lone request
/// waits for nothing. If the commit fails, no write of the batch happened and every caller gets the error.
///
/// `@unchecked Sendable`: the queue is guarded by `condition`; a write's closure runs on the leader's
/// thread while its caller waits, so nothing it captures is used by two threads at once.
final class GroupCommit: @unchecked Sendable {
    private final class Write {
        let body: (Database) throws -> Void
        var error: (any Error)?
        var done = false

        init(_ body: @escaping (Database) throws -> Void) { self.body = body }
    }

    private let pool: LedgerPool
    private let condition = NSCondition()
    private var waiting: [Write] = []
    private var leading = false

    init(pool: LedgerPool) { self.pool = pool }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var result: T?
            let write = Write { db in result = try body(db) }
            condition.lock()
            waiting.append(write)
            while !write.done {
                if leading {
                    condition.wait()
                    continue
                }
                leading = true
                let batch = waiting
                waiting = []
                condition.unlock()
                commit(batch)
                condition.lock()
                for member in batch { member.done = true }
                leading = false
                condition.broadcast()
            }
            condition.unlock()
            if let error = write.error { throw error }
            return result!
        }
    }

    private func commit(_ batch: [Write]) {
        do {
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
                try db.inTransaction(.immediate) {
                    for write in batch {
                        do {
                            // A busy, full or read-only ledger reads as UNAVAILABLE, as for a write of its own.
                            try LedgerPool.translating {
                                try db.inSavepoint {
                                    try write.body(db)
                                    return .commit
                                }
                            }
                        } catch {
                            write.error = error
                        }
                    }
                    return .commit
                }
            }
        } catch {
            // Nothing of the batch was written (the pool translated the error): every caller hears why.
            for write in batch where write.error == nil { write.error = error }
        }
    }
}

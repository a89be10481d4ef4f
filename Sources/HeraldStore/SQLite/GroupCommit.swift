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
/// Each caller waits on a semaphore of its own and is woken once: when its write is committed, or to lead
/// the next commit (the leader hands over to the first write that arrived during its commit). A shared
/// condition woke every waiting caller after each commit, and those whose write was not in it went back to sleep.
///
/// `@unchecked Sendable`: the queue is guarded by `lock`; a write's closure runs on the leader's
/// thread while its caller waits, so nothing it captures is used by two threads at once.
final class GroupCommit: @unchecked Sendable {
    private final class Write {
        let body: (Database) throws -> Void
        var error: (any Error)?
        /// Set (under `lock`) before `wake` is signalled: this caller leads the next commit.
        var leads = false
        let wake = DispatchSemaphore(value: 0)

        init(_ body: @escaping (Database) throws -> Void) { self.body = body }
    }

    private let pool: LedgerPool
    private let lock = NSLock()
    private var waiting: [Write] = []
    private var leading = false

    init(pool: LedgerPool) { self.pool = pool }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var result: T?
            let write = Write { db in result = try body(db) }
            lock.lock()
            waiting.append(write)
            if leading {
                lock.unlock()
                write.wake.wait()  // committed, or handed the lead
            } else {
                leading = true
                write.leads = true
                lock.unlock()
            }
            if write.leads {
                lock.lock()
                var batch = waiting
                waiting = []
                lock.unlock()
                commit(batch)
                // No reference to another caller's write may outlive its wake: its closure escapes only until it returns.
                let wakes = batch.compactMap { $0 === write ? nil : $0.wake }
                batch = []
                var nextWake: DispatchSemaphore?
                lock.lock()
                if let next = waiting.first {
                    next.leads = true
                    nextWake = next.wake
                } else {
                    leading = false
                }
                lock.unlock()
                for wake in wakes { wake.signal() }
                nextWake?.signal()
            }
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

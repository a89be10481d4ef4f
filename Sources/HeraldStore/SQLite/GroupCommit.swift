import Foundation
import GRDB
import HeraldCore

/// Durable writes from many threads and tasks, committed together: one transaction and one fsync for every
/// write waiting, each caller answered only once that commit is on disk.
///
/// A committer thread of the ledger's own takes every write waiting, runs each in a savepoint of one IMMEDIATE
/// transaction (a write that throws is rolled back alone and its caller gets the error), commits with
/// `synchronous = FULL`, and answers the callers. Writes arriving during that commit share the next, which starts
/// as soon as this one is answered, so batches grow with the load. If the commit fails, no write of the batch
/// happened and every caller gets the error. The thread is started by the first write and ends after `linger`
/// without one.
///
/// A blocking caller (`write(_:)`) waits on a semaphore of its own; an async caller (`write(_:) async`) is
/// suspended, so a request waiting for its commit holds no thread.
///
/// Before, the first caller to find no commit under way led it and handed the lead to a waiting caller after it.
/// Each cycle then began only once that caller's thread was woken and scheduled, and on a busy machine the next
/// batch waited for it as long as for the commit itself (`sendOobCode`'s commit wait p99 5–6 ms beside cycles of p99
/// 2.4–3.5 ms at a paced 2,000 requests a second).
///
/// `@unchecked Sendable`: the queue and the thread's state are guarded by `condition`; a write's closure runs on the
/// committer thread while its caller waits, so nothing it captures is used by two threads at once.
final class GroupCommit: @unchecked Sendable {
    private final class Write {
        let body: (Database) throws -> Void
        /// Called on the committer thread once the write's commit is on disk or failed (`error`).
        let answer: (_ error: (any Error)?) -> Void
        var error: (any Error)?

        init(_ body: @escaping (Database) throws -> Void, answer: @escaping ((any Error)?) -> Void) {
            self.body = body
            self.answer = answer
        }
    }

    private let pool: LedgerPool
    private let condition = NSCondition()
    private var waiting: [Write] = []
    /// A committer thread is running.
    private var running = false
    /// The committer thread is waiting for writes (and must be signalled).
    private var idle = false
    /// How long the committer thread waits for a write before it ends.
    private let linger: TimeInterval

    init(pool: LedgerPool, linger: TimeInterval = 0.5) {
        self.pool = pool
        self.linger = linger
    }

    /// Runs `body` in the next commit and returns its result once that commit is on disk; blocks the calling thread.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var result: T?
            var failure: (any Error)?
            let answered = DispatchSemaphore(value: 0)
            submit(
                Write({ db in result = try body(db) }) { error in
                    failure = error
                    answered.signal()
                })
            // The closure escapes only until it is answered: the committer drops the write before it answers.
            answered.wait()
            if let failure { throw failure }
            return result!
        }
    }

    /// Runs `body` in the next commit and returns its result once that commit is on disk; suspends the task meanwhile.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let result = Box<T>()
            submit(
                Write({ db in result.value = try body(db) }) { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: result.value!) }
                })
        }
    }

    private final class Box<T>: @unchecked Sendable {
        var value: T?
    }

    private func submit(_ write: Write) {
        condition.lock()
        defer { condition.unlock() }
        waiting.append(write)
        if idle {
            idle = false
            condition.signal()
        } else if !running {
            running = true
            let thread = Thread.named("herald-commit") { [self] in
                commitWhileWritesCome()
            }
            thread.start()
        }
    }

    /// The committer thread: commits what is waiting, answers it, and goes on until no write comes for `linger`.
    private func commitWhileWritesCome() {
        condition.lock()
        while true {
            if waiting.isEmpty {
                idle = true
                let deadline = Date().addingTimeInterval(linger)
                while idle && condition.wait(until: deadline) {}
                if waiting.isEmpty {
                    idle = false
                    running = false
                    condition.unlock()
                    return
                }
                idle = false
            }
            var batch = waiting
            waiting = []
            condition.unlock()
            commit(batch)
            let answers = batch.map { ($0.answer, $0.error) }
            // No caller's write may outlive its answer: a blocking caller's closure escapes only until then.
            batch = []
            for (answer, error) in answers { answer(error) }
            condition.lock()
        }
    }

    private func commit(_ batch: [Write]) {
        do {
            try pool.writeWithoutTransaction { db in
                // Cached statements, for they run in every cycle: GRDB's `inSavepoint` prepared its two on every call,
                // 4.5 % of the committer thread's CPU samples, and the two PRAGMAs prepared anew took 7.3 % (5.6 % cached).
                try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute()
                defer { try? db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute() }
                let savepoint = try db.cachedStatement(sql: "SAVEPOINT durable_write")
                let release = try db.cachedStatement(sql: "RELEASE SAVEPOINT durable_write")
                let rollback = try db.cachedStatement(sql: "ROLLBACK TRANSACTION TO SAVEPOINT durable_write")
                try db.inTransaction(.immediate) {
                    for write in batch {
                        // Inside the transaction block GRDB refuses every statement once SQLite has rolled the whole
                        // transaction back (SQLITE_ABORT), so no write runs outside it: the batch fails instead.
                        try savepoint.execute()
                        do {
                            // A busy, full or read-only ledger reads as UNAVAILABLE, as for a write of its own.
                            try LedgerPool.translating { try write.body(db) }
                            try release.execute()
                        } catch {
                            write.error = error
                            // Only this write is undone; should that fail, nothing of the batch is committed.
                            try rollback.execute()
                            try release.execute()
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

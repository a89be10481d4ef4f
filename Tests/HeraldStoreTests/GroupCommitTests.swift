import Foundation
import GRDB
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldStore

/// Durable writes from many threads and tasks share commits; each is answered after its commit, and a write
/// that throws is rolled back alone.
@Suite struct GroupCommitTests {
    let scratch = ScratchDirectory()
    let store: SQLiteStore
    /// Transactions committed since the table was made.
    let commits = Locked(0)

    init() throws {
        store = try SQLiteStore(path: scratch.path("ledger.sqlite"))
        try store.pool.write { db in try db.execute(sql: "CREATE TABLE notes (writer INTEGER NOT NULL)") }
        let commits = commits
        store.pool.base.add(transactionObserver: CommitCounter { commits.withLock { $0 += 1 } }, extent: .databaseLifetime)
    }

    /// Runs `body` on a thread of its own (the dispatch pool would not start ten blocked writers at once).
    func spawn(_ group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        Thread {
            body()
            group.leave()
        }.start()
    }

    /// Starts a write that holds the commit until `release` is signalled, and returns once it is inside.
    func holdTheCommit(_ release: DispatchSemaphore, _ group: DispatchGroup) {
        let inside = DispatchSemaphore(value: 0)
        let store = store
        spawn(group) {
            _ = try? store.writeDurably { db in
                try db.execute(sql: "INSERT INTO notes (writer) VALUES (0)")
                inside.signal()
                release.wait()
            }
        }
        inside.wait()
    }

    /// Holds a commit, starts `writers` threads running `write(1…writers)` behind it, runs `whileHeld` once they
    /// have had 0.3 s to queue, then releases the commit and waits for every writer.
    func queueBehindAHeldCommit(writers: Int, whileHeld: () -> Void = {}, _ write: @escaping @Sendable (Int) -> Void) {
        let release = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        holdTheCommit(release, group)
        for writer in 1...writers { spawn(group) { write(writer) } }
        Thread.sleep(forTimeInterval: 0.3)
        whileHeld()
        release.signal()
        group.wait()
    }

    @Test func writesArrivingDuringACommitShareTheNextAndEachIsAnsweredAfterIt() throws {
        let answered = Locked<[Int64]>([])
        let store = store
        queueBehindAHeldCommit(writers: 10, whileHeld: { #expect(answered.withLock { $0 }.isEmpty) }) { writer in
            let id = try? store.writeDurably { db -> Int64 in
                try db.execute(sql: "INSERT INTO notes (writer) VALUES (?)", arguments: [writer])
                return db.lastInsertedRowID
            }
            // Answered only once the row is committed: another connection sees it.
            let visible = try? store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes WHERE writer = ?", arguments: [writer]) }
            if let id, visible == 1 { answered.withLock { $0.append(id) } }
        }
        #expect(answered.withLock { $0 }.count == 10)
        #expect(Set(answered.withLock { $0 }).count == 10)
        #expect(commits.withLock { $0 } == 2)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") } == 11)
    }

    @Test func aWriteThatThrowsIsRolledBackAloneAndItsCallerGetsTheError() throws {
        let errors = Locked<[String]>([])
        let store = store
        queueBehindAHeldCommit(writers: 6) { writer in
            do {
                try store.writeDurably { db in
                    try db.execute(sql: "INSERT INTO notes (writer) VALUES (?)", arguments: [writer])
                    if writer % 2 == 0 { throw HeraldError(.emailExists, "writer \(writer)") }
                }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(commits.withLock { $0 } == 2)
        #expect(errors.withLock { $0 }.count == 3)
        #expect(errors.withLock { $0 }.allSatisfy { $0.contains("EMAIL_EXISTS") })
        let writers = try store.read { db in try Int.fetchAll(db, sql: "SELECT writer FROM notes ORDER BY writer") }
        #expect(writers == [0, 1, 3, 5])
    }

    /// Eight threads writing a hundred times each, as fast as they can: the lead passes from caller to caller, and
    /// every write is answered once, after its commit, with none lost and none left waiting.
    @Test func manyWritersWritingAgainAndAgainAreEachAnsweredOnceAndNoneIsLost() throws {
        let answered = Locked(0)
        let store = store
        let group = DispatchGroup()
        for writer in 1...8 {
            spawn(group) {
                for n in 0..<100 {
                    let id = try? store.writeDurably { db -> Int64 in
                        try db.execute(sql: "INSERT INTO notes (writer) VALUES (?)", arguments: [writer * 1000 + n])
                        return db.lastInsertedRowID
                    }
                    if id != nil { answered.withLock { $0 += 1 } }
                }
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(answered.withLock { $0 } == 800)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT writer) FROM notes") } == 800)
        #expect((1...800).contains(commits.withLock { $0 }))
    }

    /// Fifty tasks write behind a held commit: they wait suspended, not on the cooperative pool's two threads, so all
    /// of them are queued when it ends; they share the next commit and each is answered after it.
    @Test func suspendedWritersShareTheNextCommitAndAreEachAnsweredAfterIt() async throws {
        let release = DispatchSemaphore(value: 0)
        holdTheCommit(release, DispatchGroup())
        let store = store
        let answered = Locked(0)
        let ids = try await withThrowingTaskGroup(of: Int64.self) { tasks in
            for writer in 1...50 {
                tasks.addTask {
                    let id = try await store.durable.write { db -> Int64 in
                        try db.execute(sql: "INSERT INTO notes (writer) VALUES (?)", arguments: [writer])
                        return db.lastInsertedRowID
                    }
                    answered.withLock { $0 += 1 }
                    return id
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(answered.withLock { $0 } == 0)
            release.signal()
            var ids: [Int64] = []
            for try await id in tasks { ids.append(id) }
            return ids
        }
        #expect(Set(ids).count == 50)
        #expect(commits.withLock { $0 } == 2)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") } == 51)
    }

    @Test func writesOneAfterAnotherAreEachTheirOwnCommit() throws {
        for writer in 1...3 {
            try store.writeDurably { db in try db.execute(sql: "INSERT INTO notes (writer) VALUES (?)", arguments: [writer]) }
        }
        #expect(commits.withLock { $0 } == 3)
    }
}

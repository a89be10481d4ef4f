import Foundation
import GRDB
import HeraldTesting
import Testing

@testable import HeraldStore

/// A running worker's checkpoint thread copies the WAL into the database; the writer does not have to.
@Suite struct BackgroundCheckpointTests {
    let scratch = ScratchDirectory()

    func size(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }

    func insert(_ store: SQLiteStore, _ rows: Range<Int>) throws {
        try store.pool.write { db in
            for n in rows {
                try db.execute(sql: "INSERT INTO notes (body) VALUES (?)", arguments: [String(repeating: "x", count: 200) + "\(n)"])
            }
        }
    }

    /// Beside requests (`herald serve`) the thread only checkpoints more often: the same log is left and copied alike.
    @Test(arguments: [false, true])
    func theCheckpointThreadCopiesALargeLogIntoTheDatabaseAndStops(besideRequests: Bool) throws {
        let path = scratch.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        try store.pool.write { db in try db.execute(sql: "CREATE TABLE notes (body TEXT NOT NULL)") }
        try store.checkpoint()  // the log copied and truncated: the database file holds the new table
        let before = try size(path)
        let stop = store.checkpointInBackground(besideRequests: besideRequests)
        defer { stop() }
        // About 450 KiB of pages in the log: below wal_autocheckpoint and below the thread's 4 MiB, so left there.
        try insert(store, 0..<2000)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try size(path) == before)

        // About 5 MiB more: still below wal_autocheckpoint (32 MiB), which SQLite's own checkpoint waits for.
        try insert(store, 2000..<24000)
        let deadline = Date().addingTimeInterval(5)
        while try size(path) < before + 4_000_000, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try size(path) > before + 4_000_000)
        let stopping = Date()
        stop()
        #expect(Date().timeIntervalSince(stopping) < 1)
        // The writer goes on as before, and a fresh connection reads every row.
        try store.pool.write { db in try db.execute(sql: "INSERT INTO notes (body) VALUES ('after')") }
        let count = try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") }
        #expect(count == 24001)
    }
}

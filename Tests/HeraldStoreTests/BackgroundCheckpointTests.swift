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

    @Test func theCheckpointThreadCopiesCommittedPagesIntoTheDatabaseAndStops() throws {
        let path = scratch.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        try store.pool.write { db in try db.execute(sql: "CREATE TABLE notes (body TEXT NOT NULL)") }
        try store.checkpoint()  // the log copied and truncated: the database file holds the new table
        let before = try size(path)
        try store.pool.write { db in
            for n in 0..<2000 {
                try db.execute(sql: "INSERT INTO notes (body) VALUES (?)", arguments: [String(repeating: "x", count: 200) + "\(n)"])
            }
        }
        // About 450 KiB of pages in the log, far below wal_autocheckpoint: SQLite leaves them there.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try size(path) == before)

        let stop = store.checkpointInBackground()
        let deadline = Date().addingTimeInterval(5)
        while try size(path) == before, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let stopping = Date()
        stop()
        #expect(Date().timeIntervalSince(stopping) < 1)
        #expect(try size(path) > before + 400_000)
        // The writer goes on as before, and a fresh connection reads every row from the database file.
        try store.pool.write { db in try db.execute(sql: "INSERT INTO notes (body) VALUES ('after')") }
        let count = try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") }
        #expect(count == 2001)
    }
}

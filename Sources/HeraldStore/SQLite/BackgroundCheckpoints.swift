import Foundation
import GRDBSQLite
import HeraldCore

/// Passive WAL checkpoints on a thread and a SQLite connection of their own (`SQLiteStore.checkpointInBackground`).
///
/// `@unchecked Sendable`: `stopped` is guarded by `condition`; the connection is the thread's alone.
final class BackgroundCheckpoints: @unchecked Sendable {
    private let path: String
    private let interval: TimeInterval
    private let condition = NSCondition()
    private var stopped = false
    private var running = false

    /// The log's size (its file's: it keeps its largest size between checkpoints) from which checkpoints run here.
    private let minimumLog: Int

    init(path: String, interval: TimeInterval, minimumLog: Int) {
        self.path = path
        self.interval = interval
        self.minimumLog = minimumLog
    }

    private func logBytes() -> Int {
        var info = stat()
        return stat(path + "-wal", &info) == 0 ? Int(info.st_size) : 0
    }

    func start() {
        condition.withLock { running = true }
        let thread = Thread.named("herald-checkpoint") { [self] in
            defer {
                condition.withLock {
                    running = false; condition.broadcast()
                }
            }
            var connection: OpaquePointer?
            // No file, no thread: the store's own checkpoints still run.
            guard sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
                sqlite3_close_v2(connection)
                return
            }
            defer { sqlite3_close_v2(connection) }
            // A connection knows the database is in WAL mode (and checkpoints it) once it has read it.
            guard sqlite3_exec(connection, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK else { return }
            while !waitUntilStopped(interval) {
                // A small log is left to SQLite: copying it is no stall, and a log that is reused in place after every
                // checkpoint would let the writer go on without disk space it may soon need.
                guard logBytes() >= minimumLog else { continue }
                // SQLITE_BUSY (another checkpoint under way) and the like are only a skipped turn.
                _ = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
        }
        thread.start()
    }

    /// Stops the thread and waits for it to close its connection.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while running { condition.wait() }
        condition.unlock()
    }

    /// Waits `seconds`; true once stopped.
    private func waitUntilStopped(_ seconds: TimeInterval) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while !stopped && condition.wait(until: deadline) {}
        return stopped
    }
}

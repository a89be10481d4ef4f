import Foundation
import GRDB
import HeraldCore

/// The embedded ledger: SQLite in WAL mode through GRDB, behind the `HeraldStore` protocols.
///
/// Safe to share between threads and processes; every write is one short IMMEDIATE transaction.
///
/// ```swift
/// let store = try SQLiteStore(path: "var/herald.sqlite")
/// let id = try store.enqueue(request, messageDomain: "example.com")
/// ```
public final class SQLiteStore: HeraldStore {
    let pool: LedgerPool
    let path: String
    /// The durable writes' group commit.
    let durable: GroupCommit
    /// One-row lookups outside GRDB's reader pool (the suppression check of every send).
    let quick: QuickReads
    /// The endpoints each state change writes a webhook delivery for.
    let webhooks: WebhookRouting
    /// Whether the ledger was made with incremental auto-vacuum (`reclaimSpace` has something to do).
    let vacuums: Bool

    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    ///
    /// `busyTimeout` is how long one statement waits for another process's write lock before the
    /// operation fails as `UNAVAILABLE` (and is retried or answered 503 by the caller).
    /// - Throws: `UNAVAILABLE` while the file is locked, read-only or on a full disk;
    ///   `INVALID_CONFIGURATION` when it cannot be a ledger at all.
    /// `webhooks` names the endpoints each state change writes a delivery for, in the change's transaction.
    /// With `incrementalVacuum`, a ledger this creates is made with `auto_vacuum = INCREMENTAL`, so `reclaimSpace`
    /// can give the pages of pruned rows back to the file system; an existing ledger keeps the mode it was made with.
    public init(path: String, busyTimeout: TimeInterval = 10, webhooks: WebhookRouting = .none, incrementalVacuum: Bool = false) throws {
        self.webhooks = webhooks
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw HeraldError(.invalidConfiguration, "database \(path): cannot create \(directory): \(error.localizedDescription)")
            }
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.prepareDatabase { db in
            // Only settable before the file's first page is written (GRDB turns WAL on after this). Not by default:
            // pointer-map pages cost a million-row import about 10 % (105,000–111,000 rows/s against 121,500–121,800,
            // interleaved `scripts/bench.py` runs) and the send path about 3 %; worth it where retention deletes.
            if incrementalVacuum, !db.configuration.readonly, try Int.fetchOne(db, sql: "PRAGMA page_count") == 0 {
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // 16 MiB of pages per connection: a million-row import ran as fast with 16 as with 32 (the indexes it
            // adds to outgrow both), and its peak memory fell from 100 to 80 MiB.
            try db.execute(sql: "PRAGMA cache_size = -16384")
            // A checkpoint every 8,000 pages (32 MiB), and the WAL cut back to 64 MiB: an import's transactions
            // rewrite the same index pages, which a checkpoint then copies once instead of once per commit, and the
            // log is not shrunk and regrown between two of them. (1,000 and 4 MiB: 9 % slower in a bulk insert.)
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 8000")
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
            // The writer's statement journals in memory: an outbox insert that may do nothing on conflict fires the
            // tallies' trigger, so SQLite keeps a statement journal for it, written to a temporary file by default
            // (about 21 pwrite calls a row: queueing 20,000 rows fell from about 16,000 to 10,000 a second; 12,000 in
            // memory). Readers keep their big sorts (reports, audits) in temporary files, not in memory.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        }
        do {
            let base = try LedgerPool.translating(opening: true) { try DatabasePool(path: path, configuration: configuration) }
            try LedgerPool.translating(opening: true) { try Self.migrate(base) }
            pool = LedgerPool(base: base)
            durable = GroupCommit(pool: pool)
            quick = QuickReads(path: path, busyTimeout: busyTimeout)
            vacuums = try base.read { db in try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") } == 2
        } catch let error as DatabaseError {
            throw HeraldError(.invalidConfiguration, "database \(path): \(error.message ?? "\(error.resultCode)")")
        }
    }

    /// Applies pending migrations. Two processes opening a new ledger at once may both try the same
    /// migration; the loser sees "already exists" and looks again (each migration is one transaction).
    private static func migrate(_ pool: DatabasePool) throws {
        var attempt = 0
        while true {
            do {
                return try SQLiteMigrations.migrator.migrate(pool)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_ERROR && attempt < 10 {
                let message = error.message ?? ""
                guard message.contains("already exists") || message.contains("duplicate column") else { throw error }
                attempt += 1
                Thread.sleep(forTimeInterval: 0.05 * Double(attempt))
            }
        }
    }

    /// Writes in one IMMEDIATE transaction whose commit is fsynced (`synchronous = FULL`).
    ///
    /// The ledger otherwise runs WAL with `synchronous = NORMAL`: a commit survives a process crash
    /// but may be lost on power failure. Acknowledged requests must survive both, so enqueueing
    /// uses this; worker bookkeeping does not need to (a lost record means a resend, never a loss).
    ///
    /// Concurrent callers share a commit and its fsync (`GroupCommit`): each body runs in its own
    /// savepoint, and each caller returns once the shared commit is on disk.
    @discardableResult
    func writeDurably<T>(_ body: (Database) throws -> T) throws -> T {
        try durable.write(body)
    }

    /// Nothing to fold: SQLite's triggers update the tallies and rollups in place.
    public func foldTallies() throws -> Int { 0 }

    /// Copies the WAL into the database and truncates it, so a quiet ledger holds no stale log.
    ///
    /// SQLite checkpoints on its own every `wal_autocheckpoint` pages (8,000), but cannot while a reader holds an old snapshot
    /// and never shrinks the file below `journal_size_limit`; the worker calls this when idle.

    public func checkpoint() throws {
        try pool.writeWithoutTransaction { db in
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Runs `incremental_vacuum` on up to `pages` of the free pages beyond a tenth of the file, when the ledger was
    /// made with `auto_vacuum = INCREMENTAL`; a ledger made before keeps its free pages for new rows.
    public func reclaimSpace(pages: Int) throws -> Int {
        guard vacuums else { return 0 }
        return try pool.writeWithoutTransaction { db in
            let spare = try (Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0) - (Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0) / 10
            guard spare > 0 else { return 0 }
            let count = min(spare, pages)
            try db.execute(sql: "PRAGMA incremental_vacuum(\(count))")
            return count
        }
    }

    /// Copies the WAL into the database every 0.1 s (every 30 ms `besideRequests`) on a thread and a connection of
    /// their own, once the log has grown to 4 MiB (1,024 pages), until the returned function is called.
    ///
    /// Otherwise the writer copies it: SQLite checkpoints inside the commit that takes the log past
    /// `wal_autocheckpoint` (8,000 pages, 32 MiB), and a worker's ledger desk then recorded nothing for 100–150 ms
    /// while every connection waited for it (two such stalls in 20,000 messages, 9 % of the run). These checkpoints
    /// are PASSIVE: they copy what is committed without waiting for, or holding up, the writer or a reader, and the
    /// writer's own checkpoint finds little left to copy.
    ///
    /// Beside requests (`herald serve`), smaller and more often: a checkpoint's writes and `fsync` of the database
    /// share the disk with the API's commits, and the requests that were slowest beside the worker overlapped a
    /// checkpoint eight times as often as the others. At a paced 2,000 `sendOobCode` a second, p99 was 6.68 / 6.99 /
    /// 7.59 ms checkpointing every 0.1 s, 6.20 / 6.20 / 7.09 ms every 30 ms, and 10.6–11.1 ms every second
    /// (interleaved runs). A worker alone keeps 0.1 s: every 30 ms cost it ~6 µs of CPU per message (one connection,
    /// 20,000 messages, six interleaved runs each: 80–94 µs against 89–110).
    public func checkpointInBackground(besideRequests: Bool) -> @Sendable () -> Void {
        let checkpoints = BackgroundCheckpoints(path: path, interval: besideRequests ? 0.03 : 0.1, minimumLog: 4 << 20)
        checkpoints.start()
        return { checkpoints.stop() }
    }

    /// Reads inside a snapshot; for ledger queries and tests.
    @discardableResult
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    /// One IMMEDIATE transaction; SQLite's single writer needs no isolation beyond it.
    @discardableResult
    func write<T>(_ isolation: WriteIsolation, _ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }
}

extension SQLiteStore: LedgerEngine {
    static var dialect: SQLDialect { .sqlite }

    static func announceQueued(_ db: Database) {}
}

import Foundation
import HeraldCore

/// The ledger on PostgreSQL, for many `herald worker` and `herald serve` processes on many hosts, behind the same
/// `HeraldStore` protocols as `SQLiteStore`.
///
/// Every operation is one transaction on a pooled connection and blocks its caller, as SQLite's do. Writes are
/// SERIALIZABLE and run again when they lose a race, except the high-volume ones (enqueue, bulk and campaign
/// inserts, claim, record, release, orphan returns), which run READ COMMITTED with explicit locks: the claim's
/// `FOR UPDATE SKIP LOCKED`, an advisory lock per throttled recipient, the quota counted by upsert first.
///
/// ```swift
/// let store = try PostgresStore(location: PostgresLocation(url: "postgres://herald@db.internal/herald"))
/// ```
public final class PostgresStore: HeraldStore, LedgerEngine {
    let pool: PostgresPool
    /// The endpoints each state change writes a webhook delivery for.
    let webhooks: WebhookRouting

    /// Connects to the ledger at `location` and applies pending migrations.
    ///
    /// - Throws: `UNAVAILABLE` while the server cannot be reached; `INVALID_CONFIGURATION` when it refuses the
    ///   credentials or the database does not exist.
    public init(
        location: PostgresLocation, poolSize: Int = 8, timeouts: PostgresTimeouts = PostgresTimeouts(), webhooks: WebhookRouting = .none
    ) throws {
        self.webhooks = webhooks
        pool = try PostgresPool(location: location, size: poolSize, timeouts: timeouts)
        do {
            try PostgresMigrations.migrate(pool)
        } catch let failure as PostgresFailure {
            throw HeraldError(.invalidConfiguration, "database \(location): \(failure)")
        }
    }

    /// Writes in one transaction; PostgreSQL's commit is durable (`synchronous_commit`), and concurrent commits
    /// share the WAL flush on their own, so the SQLite store's group commit has no counterpart here.
    @discardableResult
    func writeDurably<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try pool.write(.serializable, body)
    }

    static var dialect: SQLDialect { .postgres }

    /// Reads in one REPEATABLE READ READ ONLY transaction.
    func read<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try pool.read(body)
    }

    @discardableResult
    func write<T>(_ isolation: WriteIsolation, _ body: (PostgresSession) throws -> T) throws -> T {
        try pool.write(isolation == .serializable ? .serializable : .readCommitted, body)
    }

    /// Nothing to do: PostgreSQL checkpoints on its own.
    public func checkpoint() throws {}

    /// Nothing to do: PostgreSQL's autovacuum makes deleted rows' space reusable; the files keep their size.
    public func reclaimSpace(pages: Int) throws -> Int { 0 }

    /// Moves every committed delta into its tally or rollup, one statement for each table. Two folds at once are
    /// safe: the second's `DELETE` waits on the first's rows and skips them once they are gone.
    public func foldTallies() throws -> Int {
        try write(.locking) { db in
            let tallies = try db.execute(
                """
                WITH moved AS (DELETE FROM outbox_tally_deltas RETURNING state, action, campaign, n)
                INSERT INTO outbox_tallies (state, action, campaign, n)
                SELECT state, action, campaign, SUM(n) FROM moved GROUP BY state, action, campaign
                ON CONFLICT (state, action, campaign) DO UPDATE SET n = outbox_tallies.n + excluded.n
                """)
            let rollups = try db.execute(
                """
                WITH moved AS (DELETE FROM rollup_deltas RETURNING family, campaign, bucket, label, n)
                INSERT INTO rollups (family, campaign, bucket, label, n)
                SELECT family, campaign, bucket, label, SUM(n) FROM moved GROUP BY family, campaign, bucket, label
                ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = rollups.n + excluded.n
                """)
            return tallies + rollups
        }
    }

    public func checkpointInBackground(besideRequests: Bool) -> @Sendable () -> Void { {} }
}

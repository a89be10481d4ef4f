import HeraldCore

/// The ledger as every entry point and the worker see it: named operations only, no database types.
///
/// Each operation is one transaction. Calls block (SQLite does), so call them from a thread that
/// may block, never from Swift's cooperative pool; the exceptions are the `async` forms of `enqueue` and
/// `recordSuppressed`, and `suppressions(emails:)` for one address where `answersSuppressionsInPlace` says so.
/// `SQLiteStore` is the embedded implementation;
/// a second one (PostgreSQL) stands beside it behind the same protocols.
///
/// ```swift
/// let store: any HeraldStore = try SQLiteStore(path: "var/herald.sqlite")
/// let id = try store.enqueue(request, messageDomain: "example.com", throttle: nil, now: Date())
/// ```
public protocol HeraldStore: OutboxStore, CodeStore, AccountStore, CampaignStore, LedgerQueries, ConsoleQueries, AbuseStore,
    SuppressionStore, RequeueStore, WebhookStore, LedgerProbe, ConsoleActionLog,
    TemplateRevisionStore
{}

/// Opens the store a configuration names.
public enum StoreOpener {
    /// The ledger schema this build migrates to: the number of migrations it knows.
    public static var schemaVersion: Int { LedgerMigration.all.count }

    /// The PostgreSQL ledger at `database.url` when it names one, else the SQLite ledger at `database.path`;
    /// created and migrated as needed.
    ///
    /// - Throws: `INVALID_CONFIGURATION` naming the path or URL when it cannot be a ledger; `UNAVAILABLE`
    ///   while it is locked, read-only, unreachable or on a full disk.
    /// `webhooks` names the endpoints each state change writes a delivery for. With `reclaimingSpace`
    /// (`ledger.messageRetention` set), a SQLite ledger this creates is made to give pruned rows' space back.
    public static func open(
        _ database: HeraldConfiguration.Database, webhooks: WebhookRouting = .none, reclaimingSpace: Bool = false
    ) throws -> any HeraldStore {
        if PostgresLocation.isURL(database.url) {
            return try PostgresStore(
                location: PostgresLocation(url: database.url), poolSize: database.poolSize,
                timeouts: PostgresTimeouts(lock: database.busyTimeout, statement: database.statementTimeout), webhooks: webhooks)
        }
        return try SQLiteStore(
            path: database.path, busyTimeout: database.busyTimeout, webhooks: webhooks, incrementalVacuum: reclaimingSpace)
    }

    /// Where the ledger is, for messages: the PostgreSQL URL (without a password) or the SQLite path.
    public static func describe(_ database: HeraldConfiguration.Database) -> String {
        if PostgresLocation.isURL(database.url), let location = try? PostgresLocation(url: database.url) { return location.description }
        return database.path
    }
}

import Foundation
import HeraldCore

/// What each engine lends the ledger's shared operations: transactions on its sessions.
///
/// The operations themselves (`Ledger/`) are written once, as extensions of this protocol, and specialized for
/// each engine, so every read is the engine's own typed read. An engine keeps only its machinery: SQLite's group
/// commit and quick reads, PostgreSQL's pool, retries, `SKIP LOCKED` and notifications.
protocol LedgerEngine: HeraldStore {
    associatedtype Session: LedgerSession

    /// The engine's spellings, for statements named without a session (`dueRows`, `ownedBy`).
    static var dialect: SQLDialect { get }

    /// The endpoints each state change writes a webhook delivery for.
    var webhooks: WebhookRouting { get }

    /// Reads inside one snapshot.
    @discardableResult
    func read<T>(_ body: (Session) throws -> T) throws -> T

    /// One write transaction. `.serializable` writes see one consistent snapshot and may run again on PostgreSQL
    /// when they lose a race (their bodies touch only the ledger and state they reset); `.locking` writes take
    /// explicit row locks instead (READ COMMITTED). SQLite's single writer runs both alike, once.
    @discardableResult
    func write<T>(_ isolation: WriteIsolation, _ body: (Session) throws -> T) throws -> T

    /// A write whose commit is on disk before it returns (SQLite's group commit; every PostgreSQL commit).
    @discardableResult
    func writeDurably<T>(_ body: (Session) throws -> T) throws -> T

    /// Tells waiting workers that mail was queued, inside the transaction that queued it: PostgreSQL's
    /// `NOTIFY herald_queued` (delivered at commit); nothing on SQLite, whose workers share the process's signal.
    static func announceQueued(_ db: Session) throws
}

/// How a write transaction guards against concurrent ones (PostgreSQL only; SQLite has one writer).
enum WriteIsolation: Sendable {
    case serializable
    case locking
}

extension LedgerEngine {
    @discardableResult
    func write<T>(_ body: (Session) throws -> T) throws -> T {
        try write(.serializable, body)
    }
}

import Foundation
import HeraldCore

/// What each engine lends the outbox's shared operations (`Claim`, `Record`, `Enqueue`, `Requeue`, `Workers`):
/// the machinery of its hot paths, which the two engines build differently.
///
/// SQLite binds many rows into one cached multi-row statement (`MultiRowInsert`, `BoundStatement`) and reads a
/// claim through a cursor; PostgreSQL sends one array per column (`unnest`), picks rows `FOR UPDATE SKIP LOCKED`
/// and notifies listeners of queued mail. Everything else (which rows, what happens to them, the bookkeeping after)
/// is written once, in the extensions of this protocol.
protocol OutboxEngine: LedgerEngine {
    // MARK: Claim

    /// Claims the rows due by `due` (`dueRows`, `:due`, `:limit`) for `owner` until `lease`, at `now`, handing each to `taking`.
    static func takeDueRows(_ db: Session, lease: Int64, now: Int64, due: Int64, limit: Int, owner: String, into taking: inout ClaimTaking)
        throws

    /// How to find the suppression that stops each of `messages` (`reason`, `scope`), or nil when none can (no
    /// suppression is in effect for any of them).
    static func suppressionLookup(_ db: Session, for messages: [OutboxMessage], at: Int64) throws -> SuppressionLookup?

    /// Stores `codes[i]` for `messages[i]` (expiring at `codeExpiry`); returns their ids, in the same order.
    static func insertCodes(_ db: Session, _ codes: [ActionCode], for messages: [OutboxMessage], policy: ClaimPolicy, at: Int64) throws
        -> [Int64]

    // MARK: Record

    /// Moves every sent row of `batch` that its claim still holds (same lease) to `sent` (`sentState`) and starts its
    /// code's lifetime; says, for each element of `batch`, whether it moved its row (false for outcomes other than a send).
    static func recordSent(_ db: Session, _ batch: RecordBatch, policy: ClaimPolicy) throws -> [Bool]

    /// Inserts the attempt of each element of `batch`, in order, `next[i]` its `next_attempt_at`.
    static func insertAttempts(_ db: Session, _ batch: RecordBatch, next: [Int64?]) throws

    // MARK: Enqueue

    /// A durable write that queues mail: SQLite's group commit; on PostgreSQL a READ COMMITTED transaction that
    /// notifies the listening workers when it commits.
    func writeQueued<T>(_ body: (Session) throws -> T) throws -> T

    /// Inserts one request (with its prepared `row`) as a queued row, of no bulk send; returns its id.
    static func insertQueued(_ db: Session, _ request: ActionRequest, _ row: QueuedRow, at: Int64) throws -> Int64

    /// Inserts `requests` (with their prepared `rows`) as queued rows of bulk send `bulkID`; returns how many were
    /// inserted (a recipient the bulk send already queued is skipped).
    static func insertQueued(_ db: Session, _ requests: ArraySlice<ActionRequest>, _ rows: [QueuedRow], bulkID: Int64?, at: Int64) throws
        -> Int

    // MARK: Requeue

    /// Applies `change` to the rows `ids` that are still in its states, voids their unredeemed codes and records the
    /// event; returns the ids changed, in id order.
    static func requeue(_ ids: [Int64], _ db: Session, _ change: RequeueChange, at: Int64) throws -> [Int64]
}

/// A batch of outcomes to record, in the order the worker finished them.
typealias RecordBatch = [(claimed: ClaimedMessage, record: DeliveryRecord)]

/// The suppression in effect for a message's recipient (its reason and scope), if any.
typealias SuppressionLookup = (OutboxMessage) throws -> (reason: String, scope: String)?

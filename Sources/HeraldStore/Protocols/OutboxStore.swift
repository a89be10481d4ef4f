import Foundation
import HeraldCore
import NIOPosix

/// The outbox: queueing requests, and the worker's claim → record / release cycle.
public protocol OutboxStore: WorkerRegistry {
    /// A campaign's own templates, which its rows are rendered with; empty when it uses the global ones.
    func campaignTemplates(campaign id: Int64) throws -> [TemplateFile]

    /// The newest revision of each (action, locale) edited in the console, which the worker renders with instead of the
    /// files (one that goes back to the file has no parts).
    func currentTemplateRevisions() throws -> [TemplateRevision]

    /// Durably queues one request and returns its outbox id; committed (fsynced) before it returns.
    ///
    /// With a throttle (keyed by the request's `recipientKey`) and a quota, the checks and the insert share the
    /// transaction, so concurrent requests cannot both slip through. `messageDomain` is the right-hand side of the
    /// row's Message-ID.
    /// - Throws: `LimitRefusal` (`TOO_MANY_ATTEMPTS_TRY_LATER`, `QUOTA_EXCEEDED`) when a limit refuses.
    func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) throws -> Int64

    /// `enqueue(_:messageDomain:throttle:quota:now:)` for a caller on Swift's cooperative pool: the task is
    /// suspended until the commit is on disk, and no thread waits for it where the store can (the SQLite ledger's
    /// group commit). By default the blocking call runs on `blockingThreads`.
    func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) async throws
        -> Int64

    /// Whether the `async` durable writes (`enqueue(_:messageDomain:throttle:quota:now:) async`,
    /// `AbuseStore.recordSuppressed(_:reason:throttle:quota:now:) async`) suspend the task without a thread waiting
    /// (the SQLite ledger's group commit). When false they are the blocking calls run on `blockingThreads`, and a
    /// caller that must also read on a blocking thread first does both in one hop.
    var suspendsDurableWrites: Bool { get }

    /// Queues many requests in durable batches of `batchSize`.
    ///
    /// With a `bulkKey`, a request whose recipient that key already queued is skipped and counted as
    /// already queued (`outbox_bulk_recipient`), so running the same bulk send again queues only what is missing.
    /// - Throws: `BulkEnqueueFailure` when a batch fails; the batches before it stay queued.
    func enqueue(_ requests: [ActionRequest], bulkKey: String?, messageDomain: String, batchSize: Int, now: Date) throws
        -> BulkEnqueueResult

    /// Claims up to `policy.limit` due rows for `owner` (`ClaimOwner`: `<worker id>/<connection>:<bound>`) and mints a code
    /// for each (only its hash is stored); says how many due rows it took, those it cancelled or failed on the spot included.
    ///
    /// `abandoning` names earlier claims of `owner` (by the `now` each was made at) whose outcome the caller never
    /// learned (the connection was cut around their commit): rows they may have taken, never handed to a send, go
    /// back to the queue uncharged first, in the same transaction, instead of waiting for their lease to end.
    func claimBatch(_ policy: ClaimPolicy, owner: String, now: Date, abandoning: [Date]) throws -> ClaimedBatch

    /// Records attempts and moves each row to its next state, all in one transaction (a group commit);
    /// a late result never overwrites a new owner's.
    func record(_ batch: [(claimed: ClaimedMessage, record: DeliveryRecord)], policy: ClaimPolicy) throws

    /// Returns claimed rows that were not sent to the queue at once, voiding their codes.
    func release(_ claimed: [ClaimedMessage], now: Date) throws

    /// How much work is pending and when the next piece is due.
    func queueStatus() throws -> QueueStatus

    /// Outbox rows in id order, optionally filtered by state and address.
    func messages(state: OutboxState?, email: EmailAddress?, limit: Int?) throws -> [OutboxMessage]

    /// The recorded attempts of one row, oldest first.
    func attempts(outboxID: Int64) throws -> [DeliveryAttempt]

    /// Rows per state.
    func stateCounts() throws -> [OutboxState: Int]
}

extension OutboxStore {
    public var suspendsDurableWrites: Bool { false }
}

extension OutboxStore where Self: Sendable {
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) async throws
        -> Int64
    {
        try await blockingThreads.runIfActive {
            try self.enqueue(request, messageDomain: messageDomain, throttle: throttle, quota: quota, now: now)
        }
    }
}

extension OutboxStore {
    /// Queues one request with no hourly quota; a refusal surfaces as its `HeraldError`.
    @discardableResult
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, now: Date) throws -> Int64 {
        do {
            return try enqueue(request, messageDomain: messageDomain, throttle: throttle, quota: nil, now: now)
        } catch let refusal as LimitRefusal {
            throw refusal.error
        }
    }

    @discardableResult
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle? = nil) throws -> Int64 {
        try enqueue(request, messageDomain: messageDomain, throttle: throttle, now: Date())
    }

    /// Queues many requests without a bulk key (every one is queued); returns how many were.
    public func enqueue(_ requests: [ActionRequest], messageDomain: String, batchSize: Int, now: Date) throws -> Int {
        try enqueue(requests, bulkKey: nil, messageDomain: messageDomain, batchSize: batchSize, now: now).newlyQueued
    }

    /// Claims with no earlier claim abandoned.
    public func claimBatch(_ policy: ClaimPolicy, owner: String, now: Date) throws -> ClaimedBatch {
        try claimBatch(policy, owner: owner, now: now, abandoning: [])
    }

    /// The messages `claimBatch(_:owner:now:)` claims, to send.
    public func claim(_ policy: ClaimPolicy, owner: String, now: Date) throws -> [ClaimedMessage] {
        try claimBatch(policy, owner: owner, now: now).messages
    }

    /// Claims for a connection with no worker behind it (tests, one-off tools).
    public func claim(_ policy: ClaimPolicy, now: Date = Date()) throws -> [ClaimedMessage] {
        try claim(policy, owner: "local/0", now: now)
    }

    public func release(_ claimed: [ClaimedMessage]) throws { try release(claimed, now: Date()) }

    /// Records one attempt (see `record(_:policy:)`).
    public func record(_ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy) throws {
        try self.record([(claimed, record)], policy: policy)
    }

    public func messages(state: OutboxState? = nil, email: EmailAddress? = nil) throws -> [OutboxMessage] {
        try messages(state: state, email: email, limit: nil)
    }
}

/// What a bulk enqueue did with its requests.
///
/// A request is already queued when its bulk key queued its recipient before (a re-run of the same
/// `herald send --recipients` file), so re-running after a failure part-way queues exactly the rest.
public struct BulkEnqueueResult: Sendable, Hashable {
    /// Rows this call inserted.
    public var newlyQueued: Int
    /// Requests skipped because an earlier call with the same bulk key queued their recipient.
    public var alreadyQueued: Int

    /// The requests that are now in the outbox.
    public var total: Int { newlyQueued + alreadyQueued }

    public init(newlyQueued: Int = 0, alreadyQueued: Int = 0) {
        self.newlyQueued = newlyQueued
        self.alreadyQueued = alreadyQueued
    }
}

/// A bulk enqueue failed part-way: the batches before the failure stay committed, and `committed` says what they hold.
public struct BulkEnqueueFailure: Error, Sendable, CustomStringConvertible {
    /// What the committed batches hold.
    public let committed: BulkEnqueueResult
    /// How many requests the call was given.
    public let requested: Int
    /// The failure itself, as the store reported it.
    public let error: any Error

    public init(committed: BulkEnqueueResult, requested: Int, error: any Error) {
        self.committed = committed
        self.requested = requested
        self.error = error
    }

    public var description: String { "\(error) (\(committed.total) of \(requested) queued before the failure)" }
}

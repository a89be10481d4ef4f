import Foundation
import HeraldCore
import NIOPosix

/// One row of `abuse_counts`: how many requests a counter saw for a key in one hour.
public struct AbuseCount: Sendable, Hashable {
    public var counter: String
    public var key: String
    /// The start of the hour.
    public var hour: Date
    public var count: Int

    public init(counter: String, key: String, hour: Date, count: Int) {
        self.counter = counter
        self.key = key
        self.hour = Date(timeIntervalSince1970: (hour.timeIntervalSince1970 / 3600).rounded(.down) * 3600)
        self.count = count
    }
}

/// What the abuse limits keep in the ledger: suppressed requests, hourly counters, and their retention.
public protocol AbuseStore {
    /// Durably records a request answered "sent" but not sent (enumeration protection), after the same
    /// cooldown, daily cap and quotas a real send passes, in one fsynced transaction like a real send's.
    ///
    /// - Throws: `LimitRefusal` when a limit refuses.
    func recordSuppressed(_ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date) throws

    /// `recordSuppressed(_:reason:throttle:quota:now:)` for a caller on Swift's cooperative pool, as
    /// `OutboxStore`'s `enqueue(_:messageDomain:throttle:quota:now:) async`.
    func recordSuppressed(_ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date)
        async throws

    /// Counts one email against `quota` on its own (an email the caller must send whatever happens, such as a
    /// security notice, charged before the change that causes it).
    /// - Throws: `LimitRefusal` when the project's or the account's hourly quota is spent.
    func chargeQuota(_ quota: SendQuota, now: Date) throws

    /// Adds counts to `abuse_counts` (one row per counter, key and hour). Not fsynced: a crash may lose the last ones.
    func addAbuseCounts(_ counts: [AbuseCount]) throws

    /// The counts of the hours from `since` on, newest first and the largest first within an hour: up to `limit`.
    func abuseCounts(since: Date, limit: Int) throws -> [AbuseCount]
}

extension AbuseStore where Self: Sendable {
    public func recordSuppressed(_ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date)
        async throws
    {
        try await blockingThreads.runIfActive {
            try self.recordSuppressed(request, reason: reason, throttle: throttle, quota: quota, now: now)
        }
    }
}

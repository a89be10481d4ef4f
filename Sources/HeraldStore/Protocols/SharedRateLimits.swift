import Foundation

/// Send-rate caps kept in the ledger, so that every process sharing it shares one cap (`worker.maxRate` across
/// the workers of several hosts). Stores whose processes all live on one host need not provide it.
public protocol SharedRateLimits: Sendable {
    /// Reserves `count` consecutive send slots `interval` seconds apart under `key`, after every slot any process
    /// reserved before, and returns the time of the first one.
    func reserveSendSlots(_ count: Int, interval: TimeInterval, key: String, now: Date) throws -> Date
}

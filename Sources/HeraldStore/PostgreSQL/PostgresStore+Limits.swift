import Foundation
import HeraldCore

/// The send limits' transaction on PostgreSQL (the rest is `Ledger/Limits.swift`).
extension PostgresStore {
    /// READ COMMITTED with explicit locks, as a send's enqueue: the recipient's advisory lock (`lockThrottle`) and
    /// the quota counted by upsert first.
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        try write(.locking) { db in try Self.recordSuppressed(db, request, reason: reason, throttle: throttle, quota: quota, now: now) }
    }
}

import Foundation
import GRDB
import HeraldCore

/// The send limits' transactions on SQLite (the rest is `Ledger/Limits.swift`).
extension SQLiteStore {
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) throws {
        try writeDurably { db in try Self.recordSuppressed(db, request, reason: reason, throttle: throttle, quota: quota, now: now) }
    }

    /// The same, suspending the task rather than a thread while the group commit runs.
    public func recordSuppressed(
        _ request: ActionRequest, reason: HeraldError.Code, throttle: SendThrottle?, quota: SendQuota?, now: Date
    ) async throws {
        try await durable.write { db in try Self.recordSuppressed(db, request, reason: reason, throttle: throttle, quota: quota, now: now) }
    }
}

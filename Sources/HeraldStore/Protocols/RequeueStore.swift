import Foundation
import HeraldCore

/// Second chances and the reverse: rows requeued with a fresh attempt budget, or cancelled before they go.
public protocol RequeueStore {
    /// Requeues the matching rows (`failed`, `dead`, `expired` or `cancelled` ones; not those of a cancelled
    /// campaign) with a fresh attempt budget, due now, in one transaction: each gets an `outbox_events` entry
    /// (`retried`, with `actor`), and its unredeemed codes die (the next claim mints a new one). With `dryRun`,
    /// nothing changes. Returns how many rows matched (a dry run) or changed, and the first of their ids.
    func retry(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> RequeueMatch

    /// Cancels the matching `queued` or `deferred` rows (rows being sent are left to finish), recording
    /// `cancelled` events and voiding their codes. With `dryRun`, nothing changes. Returns how many rows matched
    /// (a dry run) or changed, and the first of their ids.
    func cancel(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> RequeueMatch
}

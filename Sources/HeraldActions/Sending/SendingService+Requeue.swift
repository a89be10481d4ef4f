import Foundation
import HeraldCore
import HeraldStore

/// What a retry or a cancel matched (a dry run) or changed: how many rows, and the first
/// `RequeueMatch.listedIDs` of their ids.
public struct RequeueResult: Sendable, Hashable {
    public let count: Int
    public let ids: [Int64]
    public let dryRun: Bool

    init(_ match: RequeueMatch, dryRun: Bool) {
        count = match.count
        ids = match.ids
        self.dryRun = dryRun
    }
}

extension SendingService {
    /// States a retry may take rows from, and the ones it takes by default (a possibly delivered row only when named:
    /// its recipient may have it already).
    public static let retryableStates: Set<OutboxState> = [.failed, .dead, .expired, .cancelled, .possiblyDelivered]
    public static let defaultRetryStates: Set<OutboxState> = [.failed, .dead]
    /// States a cancel may take rows from (all by default): rows being sent are left to finish.
    public static let cancellableStates: Set<OutboxState> = [.queued, .deferred]

    /// Gives matching rows a second chance after the relay is fixed: requeued with a fresh attempt budget,
    /// recorded in the ledger (`outbox_events`), their old codes dead; each gets a new code when it is sent.
    /// Rows to suppressed addresses are requeued too and then cancelled by the claim, visibly.
    /// - Throws: `ARGUMENT_ERROR` for a state a retry cannot take rows from.
    public func retryMessages(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date = Date()) throws -> RequeueResult {
        var filter = filter
        if filter.states.isEmpty { filter.states = Self.defaultRetryStates }
        try Self.check(filter, allowed: Self.retryableStates, "retry")
        let match = try store.retry(filter, actor: actor, dryRun: dryRun, now: now)
        if match.count > 0 { queued.signal() }
        return RequeueResult(match, dryRun: dryRun)
    }

    /// Cancels matching queued or deferred rows before they go.
    /// - Throws: `ARGUMENT_ERROR` for a state a cancel cannot take rows from.
    public func cancelMessages(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date = Date()) throws -> RequeueResult {
        var filter = filter
        if filter.states.isEmpty { filter.states = Self.cancellableStates }
        try Self.check(filter, allowed: Self.cancellableStates, "cancel")
        return RequeueResult(try store.cancel(filter, actor: actor, dryRun: dryRun, now: now), dryRun: dryRun)
    }

    private static func check(_ filter: RequeueFilter, allowed: Set<OutboxState>, _ verb: String) throws {
        try check(filter.states, allowed: allowed, verb)
        guard filter.isNarrowed || filter.all else {
            throw HeraldError(.argumentError, "name a campaign, an email or a time to \(verb) (or all, for every matching row)")
        }
    }

    private static func check(_ states: Set<OutboxState>, allowed: Set<OutboxState>, _ verb: String) throws {
        guard let bad = states.subtracting(allowed).map(\.rawValue).sorted().first else { return }
        let names = allowed.map(\.rawValue).sorted().joined(separator: ", ")
        throw HeraldError(.argumentError, "cannot \(verb) rows in state '\(bad)'; expected one of \(names)")
    }
}

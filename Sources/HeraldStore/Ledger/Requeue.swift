import Foundation
import HeraldCore

extension OutboxEngine {
    public func retry(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> RequeueMatch {
        var conditions = Self.requeueConditions(filter)
        // A cancelled campaign's rows would wait forever: the claim skips them.
        conditions.add("(o.campaign_id IS NULL OR o.campaign_id NOT IN (SELECT id FROM campaigns WHERE state = 'cancelled'))")
        let change = RequeueChange(
            event: "retried", actor: actor, states: Self.stateList(filter.states),
            assignments: """
                state = 'queued', attempts = 0, possibly_delivered = 0, first_queued_at = COALESCE(first_queued_at, queued_at),
                    queued_at = ?1, next_attempt_at = ?1, due_at = ?1,
                    lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2
                """)
        return try self.change(conditions, dryRun: dryRun, change, now: now)
    }

    public func cancel(_ filter: RequeueFilter, actor: String, dryRun: Bool, now: Date) throws -> RequeueMatch {
        let change = RequeueChange(
            event: "cancelled", actor: actor, states: "'queued','deferred'",
            assignments: "state = 'cancelled', lease_until = NULL, claimed_by = NULL, updated_at = ?1, last_reply = ?2")
        return try self.change(Self.requeueConditions(filter), dryRun: dryRun, change, now: now)
    }

    /// Counts the matching rows (a dry run), or applies `change` to them (`requeue`) a batch at a time, in id order
    /// and in durable transactions: a million-row campaign never holds the ledger's writer (or a transaction) for
    /// long, and only one batch of ids is ever in memory. The rows are those that exist when the change starts.
    private func change(_ conditions: OutboxConditions, dryRun: Bool, _ change: RequeueChange, now: Date) throws -> RequeueMatch {
        let filter = conditions.conditions.joined(separator: " AND ")
        let listed = RequeueMatch.listedIDs
        if dryRun {
            return try read { db in
                let count = try db.value("SELECT COUNT(*) FROM outbox o WHERE \(filter)", conditions.sqlArguments, as: Int64.self)
                let ids = try db.column(
                    "SELECT o.id FROM outbox o WHERE \(filter) ORDER BY o.id LIMIT \(listed)", conditions.sqlArguments, as: Int64.self)
                return RequeueMatch(count: Int(count ?? 0), ids: ids)
            }
        }
        let at = now.milliseconds
        guard let newest = try read({ db in try db.value("SELECT MAX(id) FROM outbox", as: Int64.self) }) else {
            return RequeueMatch(count: 0, ids: [])
        }
        var match = RequeueMatch(count: 0, ids: [])
        var after: Int64 = 0
        while true {
            var page = conditions
            page.add("o.id > :after AND o.id <= :newest", ["after": after, "newest": newest])
            let sql = "SELECT o.id FROM outbox o WHERE \(page.conditions.joined(separator: " AND ")) ORDER BY o.id LIMIT \(RequeueMatch.batch)"
            let batch = try read { db in try db.column(sql, page.sqlArguments, as: Int64.self) }
            guard let last = batch.last else { return match }
            // Each update re-checks the row's state, so a row that moved on meanwhile is left alone.
            let changed = try writeDurably { db in try Self.requeue(batch, db, change, at: at) }
            match.count += changed.count
            match.ids += changed.prefix(listed - match.ids.count)
            if batch.count < RequeueMatch.batch { return match }
            after = last
        }
    }

    /// The states as an SQL list; `NULL` (matching nothing) when there are none.
    private static func stateList(_ states: Set<OutboxState>) -> String {
        states.isEmpty ? "NULL" : states.map { "'\($0.rawValue)'" }.sorted().joined(separator: ",")
    }

    /// The conditions of a filter over `outbox o`.
    private static func requeueConditions(_ filter: RequeueFilter) -> OutboxConditions {
        var conditions = OutboxConditions(table: "o")
        conditions.add("o.state IN (\(stateList(filter.states)))")
        conditions.campaign(filter.campaign)
        conditions.email(filter.email)
        conditions.queued(since: filter.since)
        conditions.queued(until: filter.until)
        conditions.kind(filter.kind)
        if let ids = filter.ids {
            switch dialect {
            case .sqlite: conditions.add("o.id IN (\(ids.map(String.init).joined(separator: ",")))")
            case .postgres: conditions.add("o.id = ANY(:ids::bigint[])", ["ids": ids])
            }
        }
        return conditions
    }
}

/// What a retry or a cancel matched (a dry run) or changed: how many rows, and the first of their ids.
public struct RequeueMatch: Sendable, Hashable {
    /// How many ids a match lists at most: a campaign-wide change answers with a count, not a million ids.
    public static let listedIDs = 1000
    /// Rows a retry or a cancel reads and changes per transaction.
    public static let batch = 2000

    public var count: Int
    /// The first `listedIDs` ids, in id order.
    public var ids: [Int64]

    public init(count: Int, ids: [Int64]) {
        self.count = count
        self.ids = ids
    }
}

/// A retry or a cancel, as each engine's `requeue` applies it to a batch of rows: the statement is
/// `UPDATE outbox SET <assignments> WHERE <the rows> AND state IN (<states>)`, with `?1` now and `?2` the reply.
struct RequeueChange: Sendable {
    /// The `outbox_events` kind: `retried`, `cancelled`.
    let event: String
    let actor: String
    /// The states a row must still be in, as an SQL list.
    let states: String
    let assignments: String

    /// The row's new `last_reply`.
    var reply: String { "\(event) by \(actor)" }
}

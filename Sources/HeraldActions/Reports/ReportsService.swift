import Foundation
import HeraldCore
import HeraldStore

/// Reading the ledger: messages, campaign reports, the audit, refused requests and the outbox's counts.
///
/// ```swift
/// let report = try actions.reports.report(campaign: 1)
/// ```
public final class ReportsService: Sendable {
    let store: any HeraldStore

    init(store: any HeraldStore) {
        self.store = store
    }
}

extension ReportsService {
    /// Streams the rows matching `search`, oldest first, at most `limit` (`herald messages`), in bounded memory.
    public func messages(_ search: MessageSearch, limit: Int? = nil, each: (OutboxMessage) throws -> Void) throws {
        try store.messages(search, limit: limit, each: each)
    }

    /// A campaign's report. - Throws: `NOT_FOUND`.
    public func report(campaign id: Int64) throws -> CampaignReport {
        try store.report(campaign: id, now: Date())
    }

    /// Streams the audit rows matching `filter`, oldest first, in bounded memory.
    public func audit(_ filter: AuditFilter, each: (AuditRow) throws -> Void) throws {
        try store.audit(filter, now: Date(), each: each)
    }

    /// Provider sign-ins, links, take-overs and `needConfirmation` answers (`herald audit --sign-ins`).
    public func accountEvents(email: String?, since: Date?, until: Date?, each: (AccountEventRow) throws -> Void) throws {
        try store.accountEvents(email: email, since: since, until: until, each: each)
    }

    /// Refused requests and unknown-code visits per counter, key and hour, newest first and the largest first within
    /// an hour (`herald throttles`): up to `limit`, so a flood from many networks never lists the whole table.
    public func abuseCounts(since: Date, limit: Int = 1000) throws -> [AbuseCount] {
        try store.abuseCounts(since: since, limit: limit)
    }

    /// The outbox counted by state, action and campaign, read off the cooperative pool: `/metrics`'s queue depth
    /// and campaign progress, computed when scraped.
    public func outboxCounts() async throws -> [OutboxCount] {
        let store = store
        return try await offload { try store.outboxCounts() }
    }
}

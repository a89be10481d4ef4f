import Foundation
import HeraldCore

/// Read-only questions about the ledger: reports and the audit.
public protocol LedgerQueries: Sendable {
    /// Everything `herald campaign report` shows, from one snapshot.
    func report(campaign id: Int64, now: Date) throws -> CampaignReport

    /// Streams the outbox rows matching `search` to `each`, oldest first, at most `limit`, in bounded memory.
    func messages(_ search: MessageSearch, limit: Int?, each: (OutboxMessage) throws -> Void) throws

    /// Streams the audit rows matching `filter` to `each`, oldest first, in bounded memory.
    func audit(_ filter: AuditFilter, now: Date, each: (AuditRow) throws -> Void) throws

    /// Streams provider sign-ins, links, take-overs and `needConfirmation` answers from `since` to `until`, oldest first;
    /// with an email, only those of the account that has it now.
    func accountEvents(email: String?, since: Date?, until: Date?, each: (AccountEventRow) throws -> Void) throws

    /// The outbox's rows counted by state, action and campaign, from one snapshot (one pass over the table).
    func outboxCounts() throws -> [OutboxCount]
}

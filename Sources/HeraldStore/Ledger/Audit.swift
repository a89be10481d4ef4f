import Foundation
import HeraldCore

/// Rows read per statement while streaming an audit: the audit pages by id through one read transaction's
/// snapshot (SQLite's, or PostgreSQL's REPEATABLE READ), so memory stays bounded however many rows match.
private let auditPageSize = 1000

extension LedgerEngine {
    /// Streams the audit rows matching `filter` to `each`, oldest first, in bounded memory.
    public func audit(_ filter: AuditFilter, now: Date, each: (AuditRow) throws -> Void) throws {
        let conditions = OutboxConditions.audit(filter, now: now)
        let newestFirst = filter.newestFirst
        try read { db in
            var after: Int64?
            while true {
                var page = conditions
                if let after { page.add(newestFirst ? "o.id < :after" : "o.id > :after", ["after": after]) }
                let rows = try db.fetchAll(Self.auditSQL(page, newestFirst: newestFirst, limit: auditPageSize), page.sqlArguments)
                for row in rows { try each(Records.audit(row)) }
                guard rows.count == auditPageSize, let last = rows.last else { return }
                after = RecordRow(last)["id"] as Int64
            }
        }
    }

    /// The audit's query over `outbox o`: one row per message, with its last reply, first click, redemption, newest
    /// feedback and whether its link expired (`:now`), filtered by `conditions`, by id.
    static func auditSQL(_ conditions: OutboxConditions, newestFirst: Bool = false, limit: Int) -> String {
        // `expired` is 0/1, never NULL: `expired = 1` and the row's `Bool` read alike on both engines.
        """
        SELECT * FROM (
            SELECT o.id, o.recipient, o.action, o.campaign_id, o.state, o.queued_at, o.sent_at, o.email,
                (SELECT a.reply_text FROM delivery_attempts a WHERE a.outbox_id = o.id AND a.outcome <> 'interrupted'
                    ORDER BY a.id DESC LIMIT 1) AS smtp_reply,
                (SELECT MIN(e.at) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                    WHERE c.outbox_id = o.id AND e.kind = 'click') AS first_click_at,
                r.redeemed_at, r.redeemed_with,
                (SELECT e.ip FROM link_events e WHERE e.code_id = r.id AND e.kind = 'redeemed' ORDER BY e.id LIMIT 1) AS redeemed_ip,
                (SELECT e.user_agent FROM link_events e WHERE e.code_id = r.id AND e.kind = 'redeemed' ORDER BY e.id LIMIT 1)
                    AS redeemed_user_agent,
                EXISTS (SELECT 1 FROM action_codes c WHERE c.outbox_id = o.id AND c.superseded_at IS NOT NULL) AS superseded,
                f.received_at AS feedback_at,
                f.kind || COALESCE(' ' || f.status, '') || ': ' || COALESCE(f.diagnostic, '') AS feedback,
                CASE WHEN r.id IS NULL AND (o.state = 'expired' OR (o.sent_at IS NOT NULL AND (
                    SELECT c.expires_at FROM action_codes c WHERE c.outbox_id = o.id ORDER BY c.id DESC LIMIT 1) <= :now))
                    THEN 1 ELSE 0 END AS expired
            FROM outbox o
            LEFT JOIN action_codes r ON r.id = (
                SELECT c.id FROM action_codes c WHERE c.outbox_id = o.id AND c.redeemed_at IS NOT NULL ORDER BY c.redeemed_at LIMIT 1)
            LEFT JOIN mail_feedback f ON f.id = (
                SELECT m.id FROM mail_feedback m WHERE m.outbox_id = o.id AND m.kind <> 'unsubscribe' ORDER BY m.id DESC LIMIT 1)
        ) AS o
        \(conditions.whereClause)
        ORDER BY o.id\(newestFirst ? " DESC" : "") LIMIT \(limit)
        """
    }

    /// Streams the account events from `since` to `until`, oldest first, in bounded memory; with an email, only
    /// those of the account that has it now (any case).
    public func accountEvents(email: String?, since: Date?, until: Date?, each: (AccountEventRow) throws -> Void) throws {
        try read { db in
            var conditions: [String] = []
            var arguments: SQLArguments = []
            if let email {
                conditions.append(db.dialect.sameAddress("a.email", "?"))
                arguments.append(email)
            }
            if let since {
                conditions.append("e.at >= ?")
                arguments.append(since.milliseconds)
            }
            if let until {
                conditions.append("e.at <= ?")
                arguments.append(until.milliseconds)
            }
            var after: Int64?
            while true {
                var page = conditions
                var pageArguments = arguments
                if let after {
                    page.append("e.id > ?")
                    pageArguments.append(after)
                }
                let sql = """
                    SELECT e.*, a.email FROM account_events e LEFT JOIN accounts a ON a.uid = e.uid
                    \(page.isEmpty ? "" : "WHERE " + page.joined(separator: " AND ")) ORDER BY e.id LIMIT \(auditPageSize)
                    """
                let rows = try db.fetchAll(sql, pageArguments)
                for row in rows { try each(Records.accountEvent(row)) }
                guard rows.count == auditPageSize, let last = rows.last else { return }
                after = RecordRow(last)["id"] as Int64
            }
        }
    }
}

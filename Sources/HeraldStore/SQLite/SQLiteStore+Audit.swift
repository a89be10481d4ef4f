import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Streams the audit rows matching `filter` to `each`, oldest first, in bounded memory.
    public func audit(_ filter: AuditFilter, now: Date, each: (AuditRow) throws -> Void) throws {
        let conditions = OutboxConditions.audit(filter, now: now)
        let sql = """
            SELECT * FROM (
                SELECT o.id, o.recipient, o.action, o.campaign_id, o.state, o.queued_at, o.sent_at, o.email,
                    (SELECT a.reply_text FROM delivery_attempts a WHERE a.outbox_id = o.id AND a.outcome != 'interrupted'
                        ORDER BY a.id DESC LIMIT 1) AS smtp_reply,
                    (SELECT MIN(e.at) FROM link_events e JOIN action_codes c ON c.id = e.code_id
                        WHERE c.outbox_id = o.id AND e.kind = 'click') AS first_click_at,
                    r.redeemed_at,
                    (SELECT e.ip FROM link_events e WHERE e.code_id = r.id AND e.kind = 'redeemed' ORDER BY e.id LIMIT 1) AS redeemed_ip,
                    (SELECT e.user_agent FROM link_events e WHERE e.code_id = r.id AND e.kind = 'redeemed' ORDER BY e.id LIMIT 1)
                        AS redeemed_user_agent,
                    EXISTS (SELECT 1 FROM action_codes c WHERE c.outbox_id = o.id AND c.superseded_at IS NOT NULL) AS superseded,
                    f.received_at AS feedback_at,
                    f.kind || COALESCE(' ' || f.status, '') || ': ' || COALESCE(f.diagnostic, '') AS feedback,
                    (r.id IS NULL AND (o.state = 'expired' OR (o.sent_at IS NOT NULL AND (
                        SELECT c.expires_at FROM action_codes c WHERE c.outbox_id = o.id ORDER BY c.id DESC LIMIT 1) <= :now)))
                        AS expired
                FROM outbox o
                LEFT JOIN action_codes r ON r.id = (
                    SELECT c.id FROM action_codes c WHERE c.outbox_id = o.id AND c.redeemed_at IS NOT NULL ORDER BY c.redeemed_at LIMIT 1)
                LEFT JOIN mail_feedback f ON f.id = (
                    SELECT m.id FROM mail_feedback m WHERE m.outbox_id = o.id AND m.kind != 'unsubscribe' ORDER BY m.id DESC LIMIT 1)
            ) AS o
            \(conditions.whereClause)
            ORDER BY o.id\(filter.newestFirst ? " DESC" : "")
            """
        try pool.read { db in
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: conditions.statementArguments)
            while let row = try cursor.next() {
                try each(Records.audit(row))
            }
        }
    }

    public func accountEvents(email: String?, since: Date?, until: Date?, each: (AccountEventRow) throws -> Void) throws {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let email {
            conditions.append("a.email = ?")
            arguments += [email]
        }
        if let since {
            conditions.append("e.at >= ?")
            arguments += [since.milliseconds]
        }
        if let until {
            conditions.append("e.at <= ?")
            arguments += [until.milliseconds]
        }
        let sql = """
            SELECT e.*, a.email FROM account_events e LEFT JOIN accounts a ON a.uid = e.uid
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")) ORDER BY e.id
            """
        try pool.read { db in
            let cursor = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while let row = try cursor.next() {
                try each(Records.accountEvent(row))
            }
        }
    }
}

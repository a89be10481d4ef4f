import Foundation
import HeraldCore

extension PostgresStore {
    /// A query to the server: asked on a blocking thread.
    public var answersSuppressionsInPlace: Bool { false }

    public func suppressions(emails: [String]) throws -> [String: Suppression] {
        guard !emails.isEmpty else { return [:] }
        return try pool.read { db in
            guard try db.fetchValue("SELECT EXISTS (SELECT 1 FROM suppressions)", as: Bool.self) == true else { return [:] }
            var found: [String: Suppression] = [:]
            // One statement for all the addresses (email is the key: one row at most each).
            let rows = try db.fetchAll(
                "SELECT * FROM suppressions WHERE email = ANY(?::text[]) AND \(Self.inEffect)",
                [Array(Set(emails)), Date().milliseconds])
            for row in rows {
                let suppression = try Records.suppression(row)
                found[suppression.email] = suppression
            }
            return found
        }
    }

    @discardableResult
    public func suppress(_ entries: [Suppression], now: Date) throws -> Int {
        guard !entries.isEmpty else { return 0 }
        return try writeDurably { db in try entries.reduce(0) { $0 + (try Self.suppress($1, db, now: now) ? 1 : 0) } }
    }

    public func unsuppress(email: String) throws -> Bool {
        try writeDurably { db in
            try db.execute("DELETE FROM suppressions WHERE email = ?", [email]) > 0
        }
    }

    public func listSuppressions(reason: Suppression.Reason?, after: String?, limit: Int) throws -> [Suppression] {
        try pool.read { db in
            try db.fetchAll(
                """
                SELECT * FROM suppressions WHERE (:reason::text IS NULL OR reason = :reason) AND (:after::text IS NULL OR email > :after)
                  AND (expires_at IS NULL OR expires_at > :now)
                ORDER BY email LIMIT :limit
                """,
                ["reason": reason?.rawValue, "after": after, "limit": limit, "now": Date().milliseconds]
            ).map(Records.suppression)
        }
    }

    public func recordFeedback(_ feedback: MailFeedback, softLimit: Int, softWindow: TimeInterval, now: Date) throws
        -> FeedbackOutcome?
    {
        let at = now.milliseconds
        return try writeDurably { db in
            guard let row = try db.fetchOne("SELECT recipient, state FROM outbox WHERE id = ?", [feedback.outboxID])
            else { return nil }
            let recipient: String = row["recipient"]
            let stateText: String = row["state"]
            var state = OutboxState(rawValue: stateText) ?? .sent
            try db.execute(
                """
                INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [feedback.outboxID, recipient, feedback.kind.rawValue, feedback.status, feedback.diagnostic, at])
            if let (next, reply) = FeedbackRules.transition(from: state, feedback) {
                try db.execute(
                    "UPDATE outbox SET state = ?, last_reply = ?, updated_at = ? WHERE id = ?", [next.rawValue, reply, at, feedback.outboxID])
                state = next
                try emitWebhook(db, .bounced, outboxID: feedback.outboxID, at: at, extra: FeedbackRules.webhookExtra(feedback))
            }
            let suppression = try FeedbackRules.suppression(
                for: feedback, recipient: recipient, softLimit: softLimit, softWindow: softWindow, now: now
            ) { since in
                try db.fetchValue(
                    """
                    SELECT COUNT(DISTINCT outbox_id) FROM mail_feedback WHERE recipient = ? AND kind = 'soft' AND received_at > ?
                    """,
                    [recipient, since], as: Int.self) ?? 0
            }
            guard let entry = suppression else { return FeedbackOutcome(recipient: recipient, state: state, suppressed: nil) }
            let changed = try Self.suppress(entry, db, now: now)
            return FeedbackOutcome(recipient: recipient, state: state, suppressed: changed ? entry : nil)
        }
    }

    public func recordUnsubscribe(outboxID: Int64, now: Date) throws -> FeedbackOutcome? {
        try writeDurably { db in
            guard
                let row = try db.fetchOne(
                    "SELECT recipient, state, campaign_id FROM outbox WHERE id = ? AND campaign_id IS NOT NULL", [outboxID])
            else { return nil }
            let recipient: String = row["recipient"]
            let campaign: Int64 = row["campaign_id"]
            let state: String = row["state"]
            try db.execute(
                """
                INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                VALUES (?, ?, 'unsubscribe', NULL, ?, ?)
                """, [outboxID, recipient, "one-click unsubscribe from campaign \(campaign)", now.milliseconds])
            let entry = Suppression(
                email: recipient, reason: .unsubscribe, detail: "campaign \(campaign)", outboxID: outboxID, createdAt: now)
            let changed = try Self.suppress(entry, db, now: now)
            return FeedbackOutcome(recipient: recipient, state: OutboxState(rawValue: state) ?? .sent, suppressed: changed ? entry : nil)
        }
    }

    public func unsubscribeTarget(outboxID: Int64) throws -> (email: String, locale: String, campaign: Campaign)? {
        try pool.read { db in
            guard
                let row = try db.fetchOne(
                    """
                    SELECT o.recipient, o.locale AS recipient_locale, c.* FROM outbox o JOIN campaigns c ON c.id = o.campaign_id
                    WHERE o.id = ?
                    """, [outboxID])
            else { return nil }
            let email: String = row["recipient"]
            let locale: String = row["recipient_locale"]
            return (email, locale, try Records.campaign(row))
        }
    }

    public func feedbackCounts(campaign id: Int64) throws -> [FeedbackCount] {
        try pool.read { db in
            // SQLite's `GLOB '[245].[0-9]*'` and `substr(…, instr(…))`: the class is the status up to its second dot.
            try db.fetchAll(
                """
                SELECT kind, class, COUNT(*) AS n FROM (
                    SELECT f.kind, CASE WHEN f.status ~ '^[245]\\.[0-9]'
                            THEN substring(f.status, 1, strpos(substring(f.status, 3), '.') + 1) END AS class,
                        ROW_NUMBER() OVER (PARTITION BY f.outbox_id, f.kind = 'complaint' ORDER BY f.kind = 'hard' DESC, f.id DESC) AS latest
                    FROM mail_feedback f JOIN outbox o ON o.id = f.outbox_id
                    WHERE o.campaign_id = ? AND f.kind <> 'unsubscribe') AS feedback
                WHERE latest = 1
                GROUP BY 1, 2 ORDER BY 1, 2 NULLS FIRST
                """, [id]
            ).compactMap { (row: SQLRow) -> FeedbackCount? in
                let kind: String = row["kind"]
                let statusClass: String? = row["class"]
                let count: Int = row["n"]
                return MailFeedback.Kind(rawValue: kind).map { FeedbackCount(kind: $0, statusClass: statusClass, count: count) }
            }
        }
    }

    /// An entry that has not lapsed (`?` is the time).
    static let inEffect = "(expires_at IS NULL OR expires_at > ?)"

    /// Adds an entry, or replaces one that lapsed, is narrower (`campaigns` → `all`) or temporary where the new
    /// one is for good; true when the list changed. A temporary entry (a soft bounce) never replaces one for
    /// good, so an unsubscribe outlives a full mailbox.
    static func suppress(_ entry: Suppression, _ db: PostgresSession, now: Date) throws -> Bool {
        let at = now.milliseconds
        if let existing = try db.fetchOne("SELECT scope, expires_at FROM suppressions WHERE email = ?", [entry.email]) {
            let expires: Int64? = existing["expires_at"]
            guard FeedbackRules.replaces(scope: existing["scope"], expiresAt: expires, with: entry, at: at) else { return false }
            try db.execute("DELETE FROM suppressions WHERE email = ?", [entry.email])
        }
        // Two writers adding one address race in SERIALIZABLE: the loser's unique violation after its own read is
        // reported as a serialization failure (40001) and its transaction runs again.
        try db.execute(
            """
            INSERT INTO suppressions (email, reason, scope, detail, outbox_id, created_at, updated_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            SQLArguments(FeedbackRules.values(entry, at: at)))
        return true
    }

}

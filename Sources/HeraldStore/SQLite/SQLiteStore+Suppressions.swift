import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// One address is asked through `QuickReads`: one statement on a read-only connection of its own, which never waits
    /// for the writer or for GRDB's reader pool.
    public var answersSuppressionsInPlace: Bool { true }

    public func suppressions(emails: [String]) throws -> [String: Suppression] {
        guard !emails.isEmpty else { return [:] }
        let now = Date().milliseconds
        if emails.count == 1, let email = emails.first {
            // Every send asks about one address, and the answer is almost always no: asked on a connection outside
            // GRDB's reader pool (`QuickReads`; the pool's bookkeeping was a ninth of `sendOobCode`'s CPU, #12), one
            // statement without a snapshot transaction around it (the probe, its parse and the transaction were a
            // sixth of the request's CPU before that). An entry is read the same way, so the check never waits for a
            // reader of the pool: `sendOobCode` asks it on the request's task (`answersSuppressionsInPlace`).
            guard let row = try LedgerPool.translating({ try quick.firstRow(Self.lookupSuppression, text: email, number: now) })
            else { return [:] }
            return [email: try Records.suppression(row)]
        }
        return try pool.read { db in
            // An import's batch: one probe spares the lookups while the list is empty.
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM suppressions)")) == true else { return [:] }
            var found: [String: Suppression] = [:]
            let lookup = try db.cachedStatement(sql: Self.lookupSuppression)
            for email in Set(emails) {
                if let row = try Row.fetchOne(lookup, arguments: [email, now]) { found[email] = try Records.suppression(row) }
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
            try db.execute(sql: "DELETE FROM suppressions WHERE email = ?", arguments: [email])
            return db.changesCount > 0
        }
    }

    public func listSuppressions(reason: Suppression.Reason?, after: String?, limit: Int) throws -> [Suppression] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM suppressions WHERE (:reason IS NULL OR reason = :reason) AND (:after IS NULL OR email > :after)
                      AND (expires_at IS NULL OR expires_at > :now)
                    ORDER BY email LIMIT :limit
                    """,
                arguments: ["reason": reason?.rawValue, "after": after, "limit": limit, "now": Date().milliseconds]
            ).map(Records.suppression)
        }
    }

    public func recordFeedback(_ feedback: MailFeedback, softLimit: Int, softWindow: TimeInterval, now: Date) throws
        -> FeedbackOutcome?
    {
        let at = now.milliseconds
        return try writeDurably { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT recipient, state FROM outbox WHERE id = ?", arguments: [feedback.outboxID])
            else { return nil }
            let recipient: String = row["recipient"]
            var state = OutboxState(rawValue: row["state"]) ?? .sent
            try db.execute(
                sql: """
                    INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [feedback.outboxID, recipient, feedback.kind.rawValue, feedback.status, feedback.diagnostic, at])
            if let (next, reply) = FeedbackRules.transition(from: state, feedback) {
                try db.execute(
                    sql: "UPDATE outbox SET state = ?, last_reply = ?, updated_at = ? WHERE id = ?",
                    arguments: [next.rawValue, reply, at, feedback.outboxID])
                state = next
                try emitWebhook(db, .bounced, outboxID: feedback.outboxID, at: at, extra: FeedbackRules.webhookExtra(feedback))
            }
            let suppression = try FeedbackRules.suppression(
                for: feedback, recipient: recipient, softLimit: softLimit, softWindow: softWindow, now: now
            ) { since in
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(DISTINCT outbox_id) FROM mail_feedback WHERE recipient = ? AND kind = 'soft' AND received_at > ?
                        """,
                    arguments: [recipient, since]) ?? 0
            }
            guard let entry = suppression else { return FeedbackOutcome(recipient: recipient, state: state, suppressed: nil) }
            let changed = try Self.suppress(entry, db, now: now)
            return FeedbackOutcome(recipient: recipient, state: state, suppressed: changed ? entry : nil)
        }
    }

    public func recordUnsubscribe(outboxID: Int64, now: Date) throws -> FeedbackOutcome? {
        try writeDurably { db in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT recipient, state, campaign_id FROM outbox WHERE id = ? AND campaign_id IS NOT NULL",
                    arguments: [outboxID])
            else { return nil }
            let recipient: String = row["recipient"]
            let campaign: Int64 = row["campaign_id"]
            try db.execute(
                sql: """
                    INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                    VALUES (?, ?, 'unsubscribe', NULL, ?, ?)
                    """, arguments: [outboxID, recipient, "one-click unsubscribe from campaign \(campaign)", now.milliseconds])
            let entry = Suppression(
                email: recipient, reason: .unsubscribe, detail: "campaign \(campaign)", outboxID: outboxID, createdAt: now)
            let changed = try Self.suppress(entry, db, now: now)
            return FeedbackOutcome(
                recipient: recipient, state: OutboxState(rawValue: row["state"]) ?? .sent, suppressed: changed ? entry : nil)
        }
    }

    public func unsubscribeTarget(outboxID: Int64) throws -> (email: String, locale: String, campaign: Campaign)? {
        try pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT o.recipient, o.locale AS recipient_locale, c.* FROM outbox o JOIN campaigns c ON c.id = o.campaign_id
                        WHERE o.id = ?
                        """, arguments: [outboxID])
            else { return nil }
            return (row["recipient"], row["recipient_locale"], try Records.campaign(row))
        }
    }

    public func feedbackCounts(campaign id: Int64) throws -> [FeedbackCount] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT kind, class, COUNT(*) AS n FROM (
                        SELECT f.kind, CASE WHEN f.status GLOB '[245].[0-9]*' THEN substr(f.status, 1, instr(substr(f.status, 3), '.') + 1)
                            END AS class,
                            ROW_NUMBER() OVER (PARTITION BY f.outbox_id, f.kind = 'complaint' ORDER BY f.kind = 'hard' DESC, f.id DESC) AS latest
                        FROM mail_feedback f JOIN outbox o ON o.id = f.outbox_id
                        WHERE o.campaign_id = ? AND f.kind != 'unsubscribe')
                    WHERE latest = 1
                    GROUP BY 1, 2 ORDER BY 1, 2
                    """, arguments: [id]
            ).compactMap { row in
                MailFeedback.Kind(rawValue: row["kind"]).map { FeedbackCount(kind: $0, statusClass: row["class"], count: row["n"]) }
            }
        }
    }

    /// An entry that has not lapsed (`?` or `:now` is the time).
    static let inEffect = "(expires_at IS NULL OR expires_at > ?)"

    /// The entry in effect for an address (`email`, then `now`).
    static let lookupSuppression = "SELECT * FROM suppressions WHERE email = ? AND \(inEffect)"

    /// Adds an entry, or replaces one that lapsed, is narrower (`campaigns` → `all`) or temporary where the new
    /// one is for good; true when the list changed. A temporary entry (a soft bounce) never replaces one for
    /// good, so an unsubscribe outlives a full mailbox.
    static func suppress(_ entry: Suppression, _ db: Database, now: Date) throws -> Bool {
        let at = now.milliseconds
        if let existing = try Row.fetchOne(db, sql: "SELECT scope, expires_at FROM suppressions WHERE email = ?", arguments: [entry.email]) {
            let expires: Int64? = existing["expires_at"]
            guard FeedbackRules.replaces(scope: existing["scope"], expiresAt: expires, with: entry, at: at) else { return false }
            try db.execute(sql: "DELETE FROM suppressions WHERE email = ?", arguments: [entry.email])
        }
        try db.execute(
            sql: """
                INSERT INTO suppressions (email, reason, scope, detail, outbox_id, created_at, updated_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: StatementArguments(FeedbackRules.values(entry, at: at)))
        return true
    }

}

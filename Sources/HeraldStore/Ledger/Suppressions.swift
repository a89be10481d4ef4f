import Foundation
import HeraldCore

/// The suppression list and what comes back about sent mail (the rules: `FeedbackRules`).
///
/// `SQLiteStore` answers `suppressions(emails:)` for itself (`SQLiteStore+Suppressions.swift`): one address through
/// `QuickReads`, on the request's task (`answersSuppressionsInPlace`).
extension LedgerEngine {
    /// A query to the server: asked on a blocking thread.
    public var answersSuppressionsInPlace: Bool { false }

    public func suppressions(emails: [String]) throws -> [String: Suppression] {
        guard !emails.isEmpty else { return [:] }
        let now = Date().milliseconds
        return try read { db in try Self.suppressions(db, emails: emails, at: now) }
    }

    /// The entries in effect for `emails` at `at`, keyed by address; one probe spares the lookups while the list is empty.
    static func suppressions(_ db: Session, emails: [String], at: Int64) throws -> [String: Suppression] {
        guard try db.fetchOneCached("SELECT EXISTS (SELECT 1 FROM suppressions)", []).map({ $0.value(at: 0) as Bool }) == true
        else { return [:] }
        var found: [String: Suppression] = [:]
        switch db.dialect {
        case .sqlite:
            // An import's batch: one lookup each, through one statement kept prepared.
            for email in Set(emails) {
                if let row = try db.fetchOneCached(lookupSuppression, [email, at]) { found[email] = try Records.suppression(row) }
            }
        case .postgres:
            // One statement for all the addresses (email is the key: one row at most each).
            let (listed, arguments) = db.dialect.oneOf("email", Array(Set(emails)))
            for row in try db.fetchAll("SELECT * FROM suppressions WHERE \(listed) AND \(inEffect)", arguments + [at]) {
                let suppression = try Records.suppression(row)
                found[suppression.email] = suppression
            }
        }
        return found
    }

    @discardableResult
    public func suppress(_ entries: [Suppression], now: Date) throws -> Int {
        guard !entries.isEmpty else { return 0 }
        return try writeDurably { db in try entries.reduce(0) { $0 + (try Self.suppress($1, db, now: now) ? 1 : 0) } }
    }

    public func unsuppress(email: String) throws -> Bool {
        try writeDurably { db in try db.execute("DELETE FROM suppressions WHERE email = ?", [email]) > 0 }
    }

    public func listSuppressions(reason: Suppression.Reason?, after: String?, limit: Int) throws -> [Suppression] {
        let now = Date().milliseconds
        return try read { db in
            let d = db.dialect
            return try db.fetchAll(
                """
                SELECT * FROM suppressions WHERE (\(d.parameter("reason", .text)) IS NULL OR reason = :reason)
                  AND (\(d.parameter("after", .text)) IS NULL OR email > :after)
                  AND (expires_at IS NULL OR expires_at > :now)
                ORDER BY email LIMIT :limit
                """,
                ["reason": reason?.rawValue, "after": after, "limit": limit, "now": now]
            ).map(Records.suppression)
        }
    }

    /// Walks `suppressions_created_at` (created_at, email) backwards from the cursor (a row-value seek on both
    /// engines): a page reads `limit` entries plus the lapsed or other-reason ones it skips, whatever page it is.
    public func recentSuppressions(reason: Suppression.Reason?, after: SuppressionCursor?, limit: Int) throws -> [Suppression] {
        let seek = after == nil ? "" : "AND (created_at, email) < (:at, :email)"
        return try read { db in
            try db.fetchAll(
                """
                SELECT * FROM suppressions WHERE (\(db.dialect.parameter("reason", .text)) IS NULL OR reason = :reason) \(seek)
                  AND (expires_at IS NULL OR expires_at > :now)
                ORDER BY created_at DESC, email DESC LIMIT :limit
                """,
                [
                    "reason": reason?.rawValue, "at": after?.createdAt.milliseconds, "email": after?.email, "limit": limit,
                    "now": Date().milliseconds,
                ]
            ).map(Records.suppression)
        }
    }

    public func recordFeedback(_ feedback: MailFeedback, softLimit: Int, softWindow: TimeInterval, now: Date) throws
        -> FeedbackOutcome?
    {
        let at = now.milliseconds
        return try writeDurably { db in
            guard let row = try db.row("SELECT recipient, state FROM outbox WHERE id = ?", [feedback.outboxID]) else {
                // A message pruned by `ledger.messageRetention` is gone with its feedback; its tombstone still names
                // the address, so what the feedback says of the address counts.
                guard let recipient = try Self.tombstone(db, feedback.outboxID)?.recipient else { return nil }
                return try Self.suppress(
                    for: feedback, recipient: recipient, state: .sent, db, softLimit: softLimit, softWindow: softWindow, now: now)
            }
            let recipient: String = row["recipient"]
            var state = OutboxState(rawValue: row["state"]) ?? .sent
            try db.execute(
                """
                INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                [feedback.outboxID, recipient, feedback.kind.rawValue, feedback.status, feedback.diagnostic, at])
            if let (next, reply) = FeedbackRules.transition(from: state, feedback) {
                try db.execute(
                    "UPDATE outbox SET state = ?, last_reply = ?, updated_at = ? WHERE id = ?",
                    [next.rawValue, reply, at, feedback.outboxID])
                state = next
                try emitWebhook(db, .bounced, outboxID: feedback.outboxID, at: at, extra: FeedbackRows.webhookExtra(feedback))
            }
            return try Self.suppress(for: feedback, recipient: recipient, state: state, db, softLimit: softLimit, softWindow: softWindow, now: now)
        }
    }

    /// The suppression `feedback` earns its recipient (`FeedbackRules`), entered.
    private static func suppress(
        for feedback: MailFeedback, recipient: String, state: OutboxState, _ db: Session, softLimit: Int, softWindow: TimeInterval,
        now: Date
    ) throws -> FeedbackOutcome {
        let suppression = try FeedbackRules.suppression(
            for: feedback, recipient: recipient, softLimit: softLimit, softWindow: softWindow, now: now
        ) { since in
            try db.value(
                "SELECT COUNT(DISTINCT outbox_id) FROM mail_feedback WHERE recipient = ? AND kind = 'soft' AND received_at > ?",
                [recipient, since], as: Int.self) ?? 0
        }
        guard let entry = suppression else { return FeedbackOutcome(recipient: recipient, state: state, suppressed: nil) }
        let changed = try Self.suppress(entry, db, now: now)
        return FeedbackOutcome(recipient: recipient, state: state, suppressed: changed ? entry : nil)
    }

    /// What `ledger.messageRetention` kept of a pruned campaign message that was sent.
    private static func tombstone(_ db: Session, _ outboxID: Int64) throws -> (recipient: String, locale: String, campaign: Int64)? {
        try db.row("SELECT recipient, locale, campaign_id FROM outbox_tombstones WHERE id = ?", [outboxID]).map {
            ($0["recipient"], $0["locale"], $0["campaign_id"])
        }
    }

    public func recordUnsubscribe(outboxID: Int64, now: Date) throws -> FeedbackOutcome? {
        try writeDurably { db in
            guard
                let row = try db.row(
                    "SELECT recipient, state, campaign_id FROM outbox WHERE id = ? AND campaign_id IS NOT NULL", [outboxID])
            else {
                // Pruned (`ledger.messageRetention`): the tombstone names the address; the click is not kept.
                guard let (recipient, _, campaign) = try Self.tombstone(db, outboxID) else { return nil }
                let entry = Self.unsubscribe(recipient, campaign: campaign, outboxID: outboxID, now: now)
                return FeedbackOutcome(recipient: recipient, state: .sent, suppressed: try Self.suppress(entry, db, now: now) ? entry : nil)
            }
            let recipient: String = row["recipient"]
            let campaign: Int64 = row["campaign_id"]
            try db.execute(
                """
                INSERT INTO mail_feedback (outbox_id, recipient, kind, status, diagnostic, received_at)
                VALUES (?, ?, 'unsubscribe', NULL, ?, ?)
                """, [outboxID, recipient, "one-click unsubscribe from campaign \(campaign)", now.milliseconds])
            let entry = Self.unsubscribe(recipient, campaign: campaign, outboxID: outboxID, now: now)
            let changed = try Self.suppress(entry, db, now: now)
            return FeedbackOutcome(
                recipient: recipient, state: OutboxState(rawValue: row["state"]) ?? .sent, suppressed: changed ? entry : nil)
        }
    }

    /// The suppression a one-click unsubscribe enters.
    private static func unsubscribe(_ recipient: String, campaign: Int64, outboxID: Int64, now: Date) -> Suppression {
        Suppression(email: recipient, reason: .unsubscribe, detail: "campaign \(campaign)", outboxID: outboxID, createdAt: now)
    }

    public func unsubscribeTarget(outboxID: Int64) throws -> (email: String, locale: String, campaign: Campaign)? {
        try read { db in
            // The message, or what `ledger.messageRetention` kept of it once pruned.
            guard
                let row = try db.row(
                    """
                    SELECT o.recipient, o.locale AS recipient_locale, c.* FROM (
                        SELECT id, recipient, locale, campaign_id FROM outbox WHERE id = :id
                        UNION ALL SELECT id, recipient, locale, campaign_id FROM outbox_tombstones WHERE id = :id) AS o
                    JOIN campaigns c ON c.id = o.campaign_id
                    """, ["id": outboxID])
            else { return nil }
            return (row["recipient"], row["recipient_locale"], try Records.campaign(row))
        }
    }

    public func feedbackCounts(campaign id: Int64) throws -> [FeedbackCount] {
        try read { db in
            try Self.rollup(db, .feedback, campaign: id).compactMap { row -> FeedbackCount? in
                let (kind, statusClass) = row.labelParts
                guard let kind = MailFeedback.Kind(rawValue: kind) else { return nil }
                return FeedbackCount(kind: kind, statusClass: statusClass.isEmpty ? nil : statusClass, count: row.count)
            }
            .sorted { ($0.kind.rawValue, $0.statusClass ?? "") < ($1.kind.rawValue, $1.statusClass ?? "") }
        }
    }

    /// An entry that has not lapsed (`?` is the time).
    static var inEffect: String { SuppressionStatements.inEffect }

    /// The entry in effect for an address (`email`, then `now`).
    static var lookupSuppression: String { SuppressionStatements.lookup }

    /// Whether an entry of `scope` (the column) stops a message (`Suppression.Scope.stops(campaign:)`); a scope this
    /// version does not know stops campaign mail only.
    static func suppressionStops(scope: String, campaignID: Int64?) -> Bool {
        Suppression.Scope(rawValue: scope)?.stops(campaign: campaignID != nil) ?? (campaignID != nil)
    }

    /// Adds an entry, or replaces one that lapsed, is narrower (`campaigns` → `all`) or temporary where the new
    /// one is for good; true when the list changed. A temporary entry (a soft bounce) never replaces one for
    /// good, so an unsubscribe outlives a full mailbox.
    static func suppress(_ entry: Suppression, _ db: Session, now: Date) throws -> Bool {
        let at = now.milliseconds
        if let existing = try db.row("SELECT scope, expires_at FROM suppressions WHERE email = ?", [entry.email]) {
            let expires: Int64? = existing["expires_at"]
            guard FeedbackRules.replaces(scope: existing["scope"], expiresAt: expires, with: entry, at: at) else { return false }
            try db.execute("DELETE FROM suppressions WHERE email = ?", [entry.email])
        }
        // Two writers adding one address race on PostgreSQL in SERIALIZABLE: the loser's unique violation after its
        // own read is reported as a serialization failure (40001) and its transaction runs again.
        try db.execute(
            """
            INSERT INTO suppressions (email, reason, scope, detail, outbox_id, created_at, updated_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            SQLArguments(FeedbackRows.values(entry, at: at)))
        return true
    }
}

/// The statements' constants, made once (a protocol extension keeps no stored ones): every send looks one address up.
enum SuppressionStatements {
    static let inEffect = "(expires_at IS NULL OR expires_at > ?)"
    static let lookup = "SELECT * FROM suppressions WHERE email = ? AND \(inEffect)"
}

extension SQLDialect {
    /// A DSN status's class (`5.1` of `5.1.1`), the status up to its second dot; NULL when it is not one.
    func statusClass(_ status: String) -> String {
        switch self {
        case .sqlite:
            "CASE WHEN \(status) GLOB '[245].[0-9]*' THEN substr(\(status), 1, instr(substr(\(status), 3), '.') + 1) END"
        case .postgres:
            "CASE WHEN \(status) ~ '^[245]\\.[0-9]' THEN substring(\(status), 1, strpos(substring(\(status), 3), '.') + 1) END"
        }
    }
}

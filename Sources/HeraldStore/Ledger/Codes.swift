import Foundation
import HeraldCore

extension LedgerEngine {
    public func mintCode(
        _ kind: ActionKind, email: String, newEmail: String?, continueURL: String?, lifetime: TimeInterval, now: Date
    ) throws -> ActionCode {
        let code = ActionCode.generateForLedger()
        let at = now.milliseconds
        let expiresAt = at + Int64(lifetime * 1000)
        try write { db in
            try db.execute(
                """
                INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, continue_url, created_at, expires_at)
                VALUES (?, NULL, ?, ?, ?, ?, ?, ?)
                """,
                [Data(code.ledgerKey), kind.rawValue, email, newEmail, continueURL, at, expiresAt])
        }
        return code
    }

    public func code(_ plaintext: String) throws -> CodeRecord? {
        try read { db in try Self.code(db, plaintext) }
    }

    /// The code with the campaign of the email that carried it.
    static func code(_ db: Session, _ plaintext: String) throws -> CodeRecord? {
        try code(db, ledgerKey: Data(ActionCode.ledgerKey(plaintext)))
    }

    static func code(_ db: Session, ledgerKey: Data) throws -> CodeRecord? {
        try db.fetchOne(
            """
            SELECT c.*, o.campaign_id FROM action_codes c LEFT JOIN outbox o ON o.id = c.outbox_id WHERE c.code_hash = ?
            """, [ledgerKey]
        ).flatMap(Records.code)
    }

    public func typedCodeTarget(email: String, kinds: Set<ActionKind>) throws -> TypedCodeTarget? {
        // Action names are the enum's own constants, never input.
        let actions = kinds.map { "'\($0.rawValue)'" }.sorted().joined(separator: ", ")
        return try read { db in
            let row = try db.fetchOne(
                """
                SELECT c.id, c.code_hash, c.typed_hash, c.typed_tries, c.action, c.expires_at, c.redeemed_at, c.superseded_at, o.settings
                FROM outbox o JOIN action_codes c ON c.outbox_id = o.id
                WHERE \(OutboxConditions.addressed(to: ":email", in: "o")) AND o.action IN (\(actions)) AND c.typed_hash IS NOT NULL
                ORDER BY c.id DESC LIMIT 1
                """, ["email": email])
            return try row.flatMap { plain in
                let row = RecordRow(plain)
                guard let kind = ActionKind(rawValue: row["action"]) else { return nil }
                let settings = try JSONDecoder().decode(ActionCodeSettings.self, from: Data((row["settings"] as String).utf8))
                return TypedCodeTarget(
                    codeID: row["id"], codeKey: Array(row["code_hash"] as Data), typedHash: Array(row["typed_hash"] as Data),
                    tries: row["typed_tries"], kind: kind, session: settings.typedCode?.session,
                    expiresAt: Date(milliseconds: row["expires_at"]),
                    spent: (row["redeemed_at"] as Int64?) != nil || (row["superseded_at"] as Int64?) != nil)
            }
        }
    }

    public func recordWrongTypedCode(_ target: TypedCodeTarget, visitor: Visitor, now: Date) throws -> Int {
        let at = now.milliseconds
        return try write { db in
            let tries =
                try db.fetchOne(
                    "UPDATE action_codes SET typed_tries = typed_tries + 1 WHERE id = ? RETURNING typed_tries", [target.codeID]
                ).map { $0.value(at: 0) as Int } ?? target.tries + 1
            try Self.insertEvent(db, codeID: target.codeID, kind: .rejected, visitor: visitor, detail: "WRONG_TYPED_CODE", at: at)
            return tries
        }
    }

    /// Records a use of a real code as a `link_events` row; a code that does not exist adds one to its visitor's
    /// network's hourly `unknown-code` counter instead (or nothing, past the visitor's limit), so scanning grows nothing.
    public func recordLinkEvent(codeID: Int64?, kind: LinkEventKind, visitor: Visitor, detail: String?, now: Date) throws {
        guard codeID != nil else {
            guard visitor.countsUnknownCodes else { return }
            let key = visitor.ip.map(IPNetwork.ledgerKey) ?? ""
            try addAbuseCounts([AbuseCount(counter: "unknown-code", key: key, hour: now, count: 1)])
            return
        }
        let at = now.milliseconds
        try write { db in
            let recorded = try Self.insertEvent(db, codeID: codeID, kind: kind, visitor: visitor, detail: detail, at: at)
            // A click past the per-code bound is not kept, and is no event either.
            if kind == .click, recorded, let codeID {
                try emitWebhook(db, .clicked, codeID: codeID, at: at, extra: WebhookPayloads.visitorJSON(visitor))
            }
        }
    }

    /// Inserts a link event; false when the code's bound kept it out.
    @discardableResult
    static func insertEvent(_ db: Session, codeID: Int64?, kind: LinkEventKind, visitor: Visitor, detail: String?, at: Int64) throws -> Bool {
        let userAgent = visitor.userAgent.map { String($0.prefix(512)) }
        let arguments: SQLArguments = [codeID, kind.rawValue, at, visitor.ip, userAgent, detail]
        guard kind != .redeemed, let codeID else {
            try db.execute("INSERT INTO link_events (code_id, kind, at, ip, user_agent, detail) VALUES (?, ?, ?, ?, ?, ?)", arguments)
            return true
        }
        // Typed placeholders: in `INSERT … SELECT` PostgreSQL does not take a NULL argument's type from the column.
        let d = db.dialect
        let inserted = try db.execute(
            """
            INSERT INTO link_events (code_id, kind, at, ip, user_agent, detail)
            SELECT \(d.parameter(.bigint)), \(d.parameter(.text)), \(d.parameter(.bigint)), \(d.parameter(.text)), \
            \(d.parameter(.text)), \(d.parameter(.text))
            WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM link_events WHERE code_id = ? AND kind <> 'redeemed' LIMIT ?) AS kept) < ?
            """,
            arguments + [codeID, WebhookPayloads.eventsPerCode, WebhookPayloads.eventsPerCode])
        return inserted > 0
    }
}

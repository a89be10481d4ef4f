import Foundation
import GRDB
import HeraldCore

extension HeraldStore {
    /// Mints a code that is not tied to an email (admin `returnOobLink`, emulator mode); only its hash is stored.
    public func mintCode(
        _ kind: ActionKind, email: String, newEmail: String?, lifetime: TimeInterval, now: Date = Date()
    ) throws -> ActionCode {
        let code = ActionCode.generate()
        let at = now.milliseconds
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, created_at, expires_at)
                    VALUES (?, NULL, ?, ?, ?, ?, ?)
                    """, arguments: [Data(code.hash), kind.rawValue, email, newEmail, at, at + Int64(lifetime * 1000)])
        }
        return code
    }

    /// The stored record of a code, looked up by the code's hash.
    public func code(_ plaintext: String) throws -> CodeRecord? {
        try pool.read { db in try Self.code(db, plaintext) }
    }

    static func code(_ db: Database, _ plaintext: String) throws -> CodeRecord? {
        try Row.fetchOne(db, sql: "SELECT * FROM action_codes WHERE code_hash = ?", arguments: [Data(ActionCode.hash(plaintext))])
            .flatMap(CodeRecord.init(row:))
    }

    /// Records a page view, redemption or rejected attempt of a link.
    public func recordLinkEvent(codeID: Int64?, kind: String, visitor: Visitor, detail: String? = nil, now: Date = Date()) throws {
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO link_events (code_id, kind, at, ip, user_agent, detail) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [codeID, kind, now.milliseconds, visitor.ip, visitor.userAgent.map { String($0.prefix(512)) }, detail])
        }
    }

    /// Consumes a code at most once and applies its effect in the same transaction.
    ///
    /// One conditional `UPDATE … WHERE redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > now`
    /// decides the single winner. The code's family (same email and action) is superseded, so no older
    /// link stays usable. If `apply` throws, nothing is consumed. Every outcome is recorded with the visitor.
    ///
    /// - Throws: `INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, or whatever `apply` throws.
    public func redeem<T>(
        _ plaintext: String, expecting kinds: Set<ActionKind>, visitor: Visitor, now: Date = Date(),
        apply: (Database, CodeRecord) throws -> T
    ) throws -> T {
        let at = now.milliseconds
        var codeID: Int64?
        do {
            return try writeDurably { db in
                let claimed = try Row.fetchOne(
                    db,
                    sql: """
                        UPDATE action_codes SET redeemed_at = :now
                        WHERE code_hash = :hash AND redeemed_at IS NULL AND superseded_at IS NULL AND expires_at > :now
                        RETURNING *
                        """, arguments: ["now": at, "hash": Data(ActionCode.hash(plaintext))]
                ).flatMap(CodeRecord.init(row:))
                guard let record = claimed, kinds.contains(record.kind) else {
                    let existing = try Self.code(db, plaintext)
                    codeID = existing?.id
                    throw existing?.problem(at: now, expecting: kinds) ?? HeraldError(.invalidOOBCode, "")
                }
                codeID = record.id
                try db.execute(
                    sql: """
                        UPDATE action_codes SET superseded_at = :now
                        WHERE email = :email AND action = :action AND id != :id AND redeemed_at IS NULL AND superseded_at IS NULL
                        """, arguments: ["now": at, "email": record.email, "action": record.kind.rawValue, "id": record.id])
                let result = try apply(db, record)
                try db.execute(
                    sql: "INSERT INTO link_events (code_id, kind, at, ip, user_agent) VALUES (?, 'redeemed', ?, ?, ?)",
                    arguments: [record.id, at, visitor.ip, visitor.userAgent.map { String($0.prefix(512)) }])
                return result
            }
        } catch let error as HeraldError {
            try recordLinkEvent(codeID: codeID, kind: "rejected", visitor: visitor, detail: error.code.rawValue, now: now)
            throw error
        }
    }

    /// Queues a request unless its recipient already got this action within `cooldown` or `dailyCap` times in 24 h.
    ///
    /// The check and the insert share one transaction, so concurrent requests cannot both slip through.
    /// - Throws: `TOO_MANY_ATTEMPTS_TRY_LATER`.
    @discardableResult
    public func enqueue(
        _ request: ActionRequest, messageDomain: String, cooldown: TimeInterval, dailyCap: Int, now: Date = Date()
    ) throws -> Int64 {
        let at = now.milliseconds
        return try writeDurably { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS sent, MAX(queued_at) AS latest FROM outbox
                    WHERE recipient = ? AND action = ? AND queued_at > ? AND campaign_id IS NULL
                    """, arguments: [request.recipient.value, request.kind.rawValue, at - 86_400_000])!
            if let latest = row["latest"] as Int64?, at - latest < Int64(cooldown * 1000) {
                throw HeraldError(.tooManyAttempts, "")
            }
            if (row["sent"] as Int) >= dailyCap {
                throw HeraldError(.tooManyAttempts, "")
            }
            return try insert(db, request, encoder: JSONEncoder(), messageDomain: messageDomain, priority: 0, at: at)
        }
    }
}

import Foundation
import GRDB
import HeraldCore

/// The SQLite machinery of the outbox's hot paths (`Ledger/Claim.swift`, `Record`, `Enqueue`, `Requeue`): cached
/// statements, claims read through a cursor, rows bound into multi-row statements through SQLite's C API.
extension SQLiteStore: OutboxEngine {

    static func takeDueRows(_ db: Database, lease: Int64, now: Int64, due: Int64, limit: Int, owner: String, into taking: inout ClaimTaking) throws {
        // Rows are read through a cursor, each decoded where SQLite holds it (no copy of every column), and all
        // of them before anything else runs.
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: claimDueRows), arguments: ["lease": lease, "now": now, "due": due, "limit": limit, "owner": owner])
        while let row = try rows.next() { taking.take(row) }
    }

    /// Claims the due rows (`dueRows`) for `:owner` until `:lease` and returns them.
    static let claimDueRows = """
        UPDATE outbox
        SET state = 'sending', attempts = attempts + 1, lease_until = :lease, claimed_by = :owner, updated_at = :now
        WHERE id IN (\(dueRows))
        RETURNING *
        """

    /// One cached lookup per claimed row (a probe of the index on `email`).
    static func suppressionLookup(_ db: Database, for messages: [OutboxMessage], at: Int64) throws -> SuppressionLookup? {
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM suppressions)")) == true else { return nil }
        let lookup = try db.cachedStatement(sql: "SELECT reason, scope FROM suppressions WHERE email = ? AND \(inEffect)")
        return { message in
            try Row.fetchOne(lookup, arguments: [message.recipient.value, at]).map { row in (row["reason"], row["scope"]) }
        }
    }

    static func insertCodes(_ db: Database, _ codes: [ActionCode], for messages: [OutboxMessage], policy: ClaimPolicy, at: Int64) throws
        -> [Int64]
    {
        try Self.codes.run(db, count: messages.count) { statement, row, first in
            let message = messages[row]
            statement.bind(first, codes[row].ledgerKey)
            statement.bind(first + 1, message.id)
            statement.bind(first + 2, message.kind.rawValue)
            statement.bind(first + 3, message.email.value)
            statement.bind(first + 4, message.newEmail?.value)
            statement.bind(first + 5, message.settings.url)
            statement.bind(first + 6, at)
            statement.bind(first + 7, codeExpiry(message, policy: policy, from: at))
        }
    }

    private static let codes = MultiRowInsert(
        "INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, continue_url, created_at, expires_at) VALUES ",
        columns: 8)
}

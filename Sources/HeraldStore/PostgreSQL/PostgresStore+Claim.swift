import Foundation
import HeraldCore

/// The PostgreSQL machinery of the outbox's hot paths (`Ledger/Claim.swift`, `Record`, `Enqueue`, `Requeue`): rows
/// claimed `FOR UPDATE SKIP LOCKED`, many rows sent as one array per column (`unnest`) in one statement.
extension PostgresStore: OutboxEngine {

    static func takeDueRows(
        _ db: PostgresSession, lease: Int64, now: Int64, due: Int64, limit: Int, owner: String, into taking: inout ClaimTaking
    ) throws {
        let rows = try db.fetchAll(claimDueRows, ["lease": lease, "now": now, "due": due, "limit": limit, "owner": owner])
        taking.reserveCapacity(rows.count)
        for row in rows { taking.take(row) }
    }

    /// Claims the due rows (`dueRows`) for `:owner` until `:lease` and returns them.
    ///
    /// The ids are chosen once, in a materialized CTE: as `WHERE id IN (SELECT … LIMIT … FOR UPDATE SKIP
    /// LOCKED)` the planner may run the subquery more than once (a semi-join rescanned), and its `LIMIT` then
    /// no longer bounds how many rows the update takes (PostgreSQL bug #15715).
    static let claimDueRows = """
        WITH due AS MATERIALIZED (\(dueRows))
        UPDATE outbox
        SET state = 'sending', attempts = attempts + 1, lease_until = :lease, claimed_by = :owner, updated_at = :now
        FROM due WHERE outbox.id = due.id
        RETURNING outbox.*
        """

    /// One lookup serves the whole claim (`email = ANY(…)`).
    static func suppressionLookup(_ db: PostgresSession, for messages: [OutboxMessage], at: Int64) throws -> SuppressionLookup? {
        guard try db.fetchValue("SELECT EXISTS (SELECT 1 FROM suppressions)", as: Bool.self) == true else { return nil }
        var suppressed: [String: (reason: String, scope: String)] = [:]
        for row in try db.fetchAll(
            "SELECT email, reason, scope FROM suppressions WHERE email = ANY(?) AND \(inEffect)",
            [messages.map(\.recipient.value), at])
        {
            suppressed[row["email"] as String] = (row["reason"] as String, row["scope"] as String)
        }
        guard !suppressed.isEmpty else { return nil }
        return { [suppressed] message in suppressed[message.recipient.value] }
    }

    /// Every code in one statement, in queue order; the ids come back keyed by their row.
    static func insertCodes(
        _ db: PostgresSession, _ codes: [ActionCode], for messages: [OutboxMessage], policy: ClaimPolicy, at: Int64
    ) throws -> [Int64] {
        var hashes: [String] = []
        var outboxIDs: [Int64] = []
        var actions: [String] = []
        var emails: [String] = []
        var newEmails: [String] = []
        var hasNewEmail: [Int64] = []
        var urls: [String] = []
        var hasURL: [Int64] = []
        var expiries: [Int64] = []
        for (message, code) in zip(messages, codes) {
            hashes.append(claimHexadecimal(code.ledgerKey))
            outboxIDs.append(message.id)
            actions.append(message.kind.rawValue)
            emails.append(message.email.value)
            newEmails.append(message.newEmail?.value ?? "")
            hasNewEmail.append(message.newEmail == nil ? 0 : 1)
            urls.append(message.settings.url ?? "")
            hasURL.append(message.settings.url == nil ? 0 : 1)
            expiries.append(codeExpiry(message, policy: policy, from: at))
        }
        let inserted = try db.fetchAll(
            """
            INSERT INTO action_codes (code_hash, outbox_id, action, email, new_email, continue_url, created_at, expires_at)
            SELECT decode(u.code_hash, 'hex'), u.outbox_id, u.action, u.email,
                   CASE WHEN u.has_new_email <> 0 THEN u.new_email END, CASE WHEN u.has_url <> 0 THEN u.url END,
                   ?10::bigint, u.expires_at
            FROM unnest(?1::text[], ?2::bigint[], ?3::text[], ?4::text[], ?5::text[], ?6::bigint[], ?7::text[], ?8::bigint[],
                        ?9::bigint[])
                 WITH ORDINALITY AS u(code_hash, outbox_id, action, email, new_email, has_new_email, url, has_url, expires_at, ord)
            ORDER BY u.ord
            RETURNING id, outbox_id
            """,
            [hashes, outboxIDs, actions, emails, newEmails, hasNewEmail, urls, hasURL, expiries, at])
        let codeIDs = Dictionary(
            inserted.map { ($0["outbox_id"] as Int64, $0["id"] as Int64) }, uniquingKeysWith: { first, _ in first })
        return try messages.map { message in
            guard let codeID = codeIDs[message.id] else {
                throw HeraldError(.unavailable, "ledger unavailable: no code was stored for outbox row \(message.id)")
            }
            return codeID
        }
    }
}

/// Lower-case hexadecimal of `bytes`, for a BYTEA sent as text (`decode(…, 'hex')`).
private func claimHexadecimal(_ bytes: [UInt8]) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
}

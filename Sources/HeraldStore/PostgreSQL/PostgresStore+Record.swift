import Foundation
import HeraldCore

/// The PostgreSQL machinery of `record` (`Ledger/Record.swift`): a batch's sends and attempts, one statement each.
extension PostgresStore {
    /// Every sent row of the batch in one statement (`unnest`), and their codes' lifetimes in another.
    static func recordSent(_ db: PostgresSession, _ batch: RecordBatch, policy: ClaimPolicy) throws -> [Bool] {
        var ids: [Int64] = []
        var leases: [Int64] = []
        var finished: [Int64] = []
        var replyCodes: [Int64] = []
        var hasReplyCode: [Int64] = []
        var replies: [String] = []
        var codeIDs: [Int64] = []
        var expiries: [Int64] = []
        for (claimed, record) in batch {
            guard case .sent = record.decision else { continue }
            let at = record.finishedAt.milliseconds
            ids.append(claimed.message.id)
            // A claimed row always has a lease; -1 matches none, as the single-row update's NULL would.
            leases.append(claimed.message.leaseUntil?.milliseconds ?? -1)
            finished.append(at)
            replyCodes.append(record.replyCode.map(Int64.init) ?? 0)
            hasReplyCode.append(record.replyCode == nil ? 0 : 1)
            replies.append(record.replyText)
            codeIDs.append(claimed.codeID)
            expiries.append(codeExpiry(claimed.message, policy: policy, from: at))
        }
        guard !ids.isEmpty else { return Array(repeating: false, count: batch.count) }
        let moved = try db.fetchColumn(
            """
            UPDATE outbox o SET state = \(sentState("o")), sent_at = u.finished, lease_until = NULL, updated_at = u.finished,
                last_reply_code = CASE WHEN u.has_code <> 0 THEN u.code END, last_reply = u.reply
            FROM unnest(?1::bigint[], ?2::bigint[], ?3::bigint[], ?4::bigint[], ?5::bigint[], ?6::text[])
                AS u(id, lease, finished, code, has_code, reply)
            WHERE o.id = u.id AND o.state = 'sending' AND o.lease_until = u.lease
            RETURNING o.id
            """, [ids, leases, finished, replyCodes, hasReplyCode, replies], as: Int64.self)
        try db.execute(
            "UPDATE action_codes c SET expires_at = u.expires FROM unnest(?1::bigint[], ?2::bigint[]) AS u(id, expires) WHERE c.id = u.id",
            [codeIDs, expiries])
        let movedIDs = Set(moved)
        return batch.map { item in
            guard case .sent = item.record.decision else { return false }
            return movedIDs.contains(item.claimed.message.id)
        }
    }

    static func insertAttempts(_ db: PostgresSession, _ batch: RecordBatch, next: [Int64?]) throws {
        var attempts = AttemptRows(capacity: batch.count)
        for ((claimed, record), next) in zip(batch, next) { attempts.append(claimed, record, next: next) }
        try attempts.insert(db)
    }

    /// The delivery attempts of one batch, one array per column, inserted together by `insert`.
    /// Nullable values travel with a 0/1 array saying which are present (an array argument cannot hold NULL).
    private struct AttemptRows {
        var outboxIDs: [Int64] = []
        var attempts: [Int64] = []
        var startedAt: [Int64] = []
        var finishedAt: [Int64] = []
        var outcomes: [String] = []
        var replyCodes: [Int64] = []
        var hasReplyCode: [Int64] = []
        var replyTexts: [String] = []
        var nextAttemptAt: [Int64] = []
        var hasNextAttempt: [Int64] = []

        init(capacity: Int) {
            outboxIDs.reserveCapacity(capacity)
            attempts.reserveCapacity(capacity)
            startedAt.reserveCapacity(capacity)
            finishedAt.reserveCapacity(capacity)
            outcomes.reserveCapacity(capacity)
            replyCodes.reserveCapacity(capacity)
            hasReplyCode.reserveCapacity(capacity)
            replyTexts.reserveCapacity(capacity)
            nextAttemptAt.reserveCapacity(capacity)
            hasNextAttempt.reserveCapacity(capacity)
        }

        mutating func append(_ claimed: ClaimedMessage, _ record: DeliveryRecord, next: Int64?) {
            outboxIDs.append(claimed.message.id)
            attempts.append(Int64(claimed.message.attempts))
            startedAt.append(record.startedAt.milliseconds)
            finishedAt.append(record.finishedAt.milliseconds)
            outcomes.append(record.outcome)
            replyCodes.append(record.replyCode.map(Int64.init) ?? 0)
            hasReplyCode.append(record.replyCode == nil ? 0 : 1)
            replyTexts.append(record.replyText)
            nextAttemptAt.append(next ?? 0)
            hasNextAttempt.append(next == nil ? 0 : 1)
        }

        func insert(_ db: PostgresSession) throws {
            guard !outboxIDs.isEmpty else { return }
            try db.execute(
                """
                INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_code, reply_text, next_attempt_at)
                SELECT u.outbox_id, u.attempt, u.started_at, u.finished_at, u.outcome,
                       CASE WHEN u.has_reply_code <> 0 THEN u.reply_code END, u.reply_text,
                       CASE WHEN u.has_next <> 0 THEN u.next_attempt_at END
                FROM unnest(?1::bigint[], ?2::bigint[], ?3::bigint[], ?4::bigint[], ?5::text[], ?6::bigint[], ?7::bigint[], ?8::text[],
                            ?9::bigint[], ?10::bigint[])
                     WITH ORDINALITY AS u(outbox_id, attempt, started_at, finished_at, outcome, reply_code, has_reply_code, reply_text,
                                          next_attempt_at, has_next, ord)
                ORDER BY u.ord
                """,
                [
                    outboxIDs, attempts, startedAt, finishedAt, outcomes, replyCodes, hasReplyCode, replyTexts, nextAttemptAt,
                    hasNextAttempt,
                ])
        }
    }
}

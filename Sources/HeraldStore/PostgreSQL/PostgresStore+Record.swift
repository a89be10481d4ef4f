import Foundation
import HeraldCore

extension PostgresStore {
    /// Records attempts and moves each row to its next state, all in one transaction: the worker's
    /// group commit, one commit for a whole batch of sends.
    ///
    /// A sent message's code starts its lifetime now; a code whose email did not go out is voided.
    /// The row only changes while this claim still holds it (same lease): a late result after the
    /// lease ran out and another worker took the row is kept as an attempt, never overwriting that
    /// worker's outcome. The attempts of the whole batch are inserted by one statement, in batch order.
    public func record(_ batch: [(claimed: ClaimedMessage, record: DeliveryRecord)], policy: ClaimPolicy) throws {
        guard !batch.isEmpty else { return }
        try pool.write { db in
            var attempts = AttemptRows(capacity: batch.count)
            for (claimed, record) in batch {
                let changed = try Self.record(db, claimed, record, policy: policy, &attempts)
                // Only an outcome that moved the row is an event: a late result after another worker took it is not.
                if changed, let event = WebhookPayloads.event(record.decision) {
                    try emitWebhook(db, event, outboxID: claimed.message.id, at: record.finishedAt.milliseconds)
                }
            }
            try attempts.insert(db)
        }
    }

    /// `sent`, unless a bounce or complaint about this send came back before it was recorded (a local MTA can
    /// bounce within milliseconds): the claim set `updated_at`, and every report since is about this send.
    private static let sentState = """
        COALESCE((SELECT CASE WHEN bool_or(f.kind = 'complaint') THEN 'complained' ELSE 'bounced' END FROM mail_feedback f
            WHERE f.outbox_id = outbox.id AND f.kind <> 'unsubscribe' AND f.received_at >= outbox.updated_at HAVING COUNT(*) > 0), 'sent')
        """

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

    /// Records one outcome (its attempt goes to `attempts`); true when it moved the row (this claim still held it).
    private static func record(
        _ db: PostgresSession, _ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy, _ attempts: inout AttemptRows
    ) throws -> Bool {
        let finished = record.finishedAt.milliseconds
        let replyCode = record.replyCode.map(Int64.init)
        let next: Int64?
        var changed = false
        switch record.decision {
        case .sent:
            next = nil
            changed =
                try db.execute(
                    """
                    UPDATE outbox SET state = \(sentState), sent_at = ?1, lease_until = NULL, updated_at = ?1,
                        last_reply_code = ?2, last_reply = ?3
                    WHERE id = ?4 AND state = 'sending' AND lease_until = ?5
                    """, [finished, replyCode, record.replyText, claimed.message.id, claimed.message.leaseUntil?.milliseconds]) > 0
            let lifetime = claimed.message.linkLifetime ?? policy.lifetime(claimed.message.kind)
            try db.execute(
                "UPDATE action_codes SET expires_at = ?1 WHERE id = ?2", [finished + Int64(lifetime * 1000), claimed.codeID])
        case .deferred(let until):
            next = until.milliseconds
            changed = try update(db, claimed, state: "deferred", record, next: next, at: finished)
        case .failed:
            next = nil
            changed = try update(db, claimed, state: "failed", record, next: nil, at: finished)
        case .dead:
            next = nil
            changed = try update(db, claimed, state: "dead", record, next: nil, at: finished)
        case .returned(let until):
            next = until.milliseconds
            // The connection failed, not the message: the attempt is given back and the row waits.
            try PostgresStore.giveBack(db, claimed, next: until.milliseconds, reply: (record.replyCode, record.replyText), at: finished)
        }
        attempts.append(claimed, record, next: next)
        return changed
    }

    private static func update(
        _ db: PostgresSession, _ claimed: ClaimedMessage, state: String, _ record: DeliveryRecord, next: Int64?, at: Int64
    ) throws -> Bool {
        let changed =
            try db.execute(
                """
                UPDATE outbox SET state = :state, lease_until = NULL, updated_at = :at,
                    next_attempt_at = COALESCE(CAST(:next AS BIGINT), next_attempt_at), last_reply_code = :code, last_reply = :reply
                WHERE id = :id AND state = 'sending' AND lease_until = :lease
                """,
                [
                    "state": state, "at": at, "next": next, "code": record.replyCode, "reply": record.replyText, "id": claimed.message.id,
                    "lease": claimed.message.leaseUntil?.milliseconds,
                ]) > 0
        try db.execute("UPDATE action_codes SET expires_at = created_at WHERE id = ?", [claimed.codeID])
        return changed
    }
}

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
        // READ COMMITTED: every update is conditional on the row's owner and lease, re-checked after any lock
        // wait, so workers recording at once never fail each other's serialization.
        try pool.write(.readCommitted) { db in
            var attempts = AttemptRows(capacity: batch.count)
            // Sends, nearly every outcome, move their rows and start their codes' lifetimes in two statements for the
            // whole batch; the rest go one by one.
            let sentMoved = try Self.recordSent(db, batch, policy: policy)
            for (claimed, record) in batch {
                let changed: Bool
                if case .sent = record.decision {
                    changed = sentMoved.contains(claimed.message.id)
                    attempts.append(claimed, record, next: nil)
                } else {
                    changed = try Self.record(db, claimed, record, policy: policy, &attempts)
                }
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
    private static func sentState(_ table: String) -> String {
        """
        COALESCE((SELECT CASE WHEN bool_or(f.kind = 'complaint') THEN 'complained' ELSE 'bounced' END FROM mail_feedback f
            WHERE f.outbox_id = \(table).id AND f.kind <> 'unsubscribe' AND f.received_at >= \(table).updated_at HAVING COUNT(*) > 0), 'sent')
        """
    }

    /// Moves every sent row of the batch that this claim still holds (same lease) to `sent` and starts its code's
    /// lifetime, one statement each for all of them; returns the ids of the rows it moved.
    private static func recordSent(
        _ db: PostgresSession, _ batch: [(claimed: ClaimedMessage, record: DeliveryRecord)], policy: ClaimPolicy
    ) throws -> Set<Int64> {
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
            let lifetime = claimed.message.linkLifetime ?? policy.lifetime(claimed.message.kind)
            codeIDs.append(claimed.codeID)
            expiries.append(at + Int64(lifetime * 1000))
        }
        guard !ids.isEmpty else { return [] }
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
        return Set(moved)
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

    /// Records one outcome other than a send (its attempt goes to `attempts`); true when it moved the row (this
    /// claim still held it).
    private static func record(
        _ db: PostgresSession, _ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy, _ attempts: inout AttemptRows
    ) throws -> Bool {
        let finished = record.finishedAt.milliseconds
        let next: Int64?
        var changed = false
        switch record.decision {
        case .sent:
            // Recorded for the whole batch by `recordSent`.
            return false
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

import Foundation
import HeraldCore

extension OutboxEngine {
    /// Records attempts and moves each row to its next state, all in one transaction: one WAL append (SQLite), one
    /// commit (PostgreSQL) for a whole batch of sends.
    ///
    /// A sent message's code starts its lifetime now; a code whose email did not go out is voided.
    /// The row only changes while this claim still holds it (same lease): a late result after the
    /// lease ran out and another worker took the row is kept as an attempt, never overwriting that
    /// worker's outcome. The attempts of the whole batch are inserted together, in batch order.
    public func record(_ batch: [(claimed: ClaimedMessage, record: DeliveryRecord)], policy: ClaimPolicy) throws {
        guard !batch.isEmpty else { return }
        // READ COMMITTED on PostgreSQL: every update is conditional on the row's owner and lease, re-checked after any
        // lock wait, so workers recording at once never fail each other's serialization.
        try write(.locking) { db in
            // Sends, nearly every outcome, are moved by the engine's batch statements; the rest go one by one.
            let sentMoved = try Self.recordSent(db, batch, policy: policy)
            var next: [Int64?] = []
            next.reserveCapacity(batch.count)
            for (index, (claimed, record)) in batch.enumerated() {
                let changed: Bool
                if case .sent = record.decision {
                    changed = sentMoved[index]
                    next.append(nil)
                } else {
                    let moved = try Self.record(db, claimed, record, policy: policy)
                    changed = moved.changed
                    next.append(moved.next)
                }
                // Only an outcome that moved the row is an event: a late result after another worker took it is not.
                if changed, let event = WebhookPayloads.event(record.decision) {
                    try emitWebhook(db, event, outboxID: claimed.message.id, at: record.finishedAt.milliseconds)
                }
            }
            try Self.insertAttempts(db, batch, next: next)
        }
    }

    /// `sent`, unless a bounce or complaint about this send came back before it was recorded (a local MTA can
    /// bounce within milliseconds): the claim set `updated_at`, and every report since is about this send.
    /// `table` names the outbox row being updated.
    static func sentState(_ table: String) -> String {
        """
        COALESCE((SELECT CASE WHEN \(dialect.anyTrue("f.kind = 'complaint'")) THEN 'complained' ELSE 'bounced' END FROM mail_feedback f
            WHERE f.outbox_id = \(table).id AND f.kind != 'unsubscribe' AND f.received_at >= \(table).updated_at HAVING COUNT(*) > 0), 'sent')
        """
    }

    /// Moves the row (and its code) for one outcome other than a send; returns whether it moved (this claim still
    /// held it) and the attempt's `next_attempt_at`.
    private static func record(
        _ db: Session, _ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy
    ) throws -> (changed: Bool, next: Int64?) {
        let finished = record.finishedAt.milliseconds
        switch record.decision {
        case .sent:
            // Moved with the batch's sends (`recordSent`).
            return (false, nil)
        case .deferred(let until):
            let next = until.milliseconds
            return (try update(db, claimed, state: "deferred", record, next: next, at: finished), next)
        case .failed:
            return (try update(db, claimed, state: "failed", record, next: nil, at: finished), nil)
        case .dead:
            return (try update(db, claimed, state: "dead", record, next: nil, at: finished), nil)
        case .returned(let until):
            // The connection failed, not the message: the attempt is given back and the row waits.
            try giveBack(db, claimed, next: until.milliseconds, reply: (record.replyCode, record.replyText), at: finished)
            return (false, until.milliseconds)
        case .possiblyDelivered(let retryAt):
            let next = retryAt?.milliseconds
            let state = retryAt == nil ? OutboxState.possiblyDelivered : .deferred
            return (try possiblyDelivered(db, claimed, state: state, record, next: next, policy: policy), next)
        }
    }

    /// Moves a row whose final dot got no reply: charged like a deferral, counted in `possibly_delivered`, and its code
    /// given the lifetime of a sent one, since its email may have arrived.
    private static func possiblyDelivered(
        _ db: Session, _ claimed: ClaimedMessage, state: OutboxState, _ record: DeliveryRecord, next: Int64?, policy: ClaimPolicy
    ) throws -> Bool {
        let finished = record.finishedAt.milliseconds
        let changed =
            try db.executeCached(
                """
                UPDATE outbox SET state = :state, lease_until = NULL, updated_at = :at, possibly_delivered = possibly_delivered + 1,
                    next_attempt_at = COALESCE(CAST(:next AS BIGINT), next_attempt_at), last_reply_code = :code, last_reply = :reply
                WHERE id = :id AND state = 'sending' AND lease_until = :lease
                """,
                [
                    "state": state.rawValue, "at": finished, "next": next, "code": record.replyCode, "reply": record.replyText,
                    "id": claimed.message.id, "lease": claimed.message.leaseUntil?.milliseconds,
                ]) > 0
        let expires = codeExpiry(claimed.message, policy: policy, from: finished)
        try db.executeCached("UPDATE action_codes SET expires_at = ? WHERE id = ?", [expires, claimed.codeID])
        return changed
    }

    private static func update(
        _ db: Session, _ claimed: ClaimedMessage, state: String, _ record: DeliveryRecord, next: Int64?, at: Int64
    ) throws -> Bool {
        let changed =
            try db.executeCached(
                """
                UPDATE outbox SET state = :state, lease_until = NULL, updated_at = :at,
                    next_attempt_at = COALESCE(CAST(:next AS BIGINT), next_attempt_at), last_reply_code = :code, last_reply = :reply
                WHERE id = :id AND state = 'sending' AND lease_until = :lease
                """,
                [
                    "state": state, "at": at, "next": next, "code": record.replyCode, "reply": record.replyText, "id": claimed.message.id,
                    "lease": claimed.message.leaseUntil?.milliseconds,
                ]) > 0
        try db.executeCached("UPDATE action_codes SET expires_at = created_at WHERE id = ?", [claimed.codeID])
        return changed
    }
}

extension SQLDialect {
    /// Whether `condition` holds for any row of the group (SQLite's `MAX` of 0/1, PostgreSQL's `bool_or`).
    fileprivate func anyTrue(_ condition: String) -> String {
        switch self {
        case .sqlite: "MAX(\(condition))"
        case .postgres: "bool_or(\(condition))"
        }
    }
}

import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// Records attempts and moves each row to its next state, all in one transaction: the worker's
    /// group commit, one WAL append for a whole batch of sends.
    ///
    /// A sent message's code starts its lifetime now; a code whose email did not go out is voided.
    /// The row only changes while this claim still holds it (same lease): a late result after the
    /// lease ran out and another worker took the row is kept as an attempt, never overwriting that
    /// worker's outcome.
    public func record(_ batch: [(claimed: ClaimedMessage, record: DeliveryRecord)], policy: ClaimPolicy) throws {
        guard !batch.isEmpty else { return }
        try pool.write { db in
            for (claimed, record) in batch { try Self.record(db, claimed, record, policy: policy) }
        }
    }

    private static func record(_ db: Database, _ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy) throws {
        let finished = record.finishedAt.milliseconds
        let next: Int64?
        switch record.decision {
        case .sent:
            next = nil
            try db.cachedStatement(
                sql: """
                    UPDATE outbox SET state = 'sent', sent_at = :at, lease_until = NULL, updated_at = :at,
                        last_reply_code = :code, last_reply = :reply
                    WHERE id = :id AND state = 'sending' AND lease_until = :lease
                    """
            ).execute(arguments: [
                "at": finished, "code": record.replyCode, "reply": record.replyText, "id": claimed.message.id,
                "lease": claimed.message.leaseUntil?.milliseconds,
            ])
            try db.cachedStatement(sql: "UPDATE action_codes SET expires_at = ? WHERE id = ?").execute(arguments: [
                finished + Int64((claimed.message.linkLifetime ?? policy.lifetime(claimed.message.kind)) * 1000), claimed.codeID,
            ])
        case .deferred(let until):
            next = until.milliseconds
            try update(db, claimed, state: "deferred", record, next: next, at: finished)
        case .failed:
            next = nil
            try update(db, claimed, state: "failed", record, next: nil, at: finished)
        case .dead:
            next = nil
            try update(db, claimed, state: "dead", record, next: nil, at: finished)
        case .returned(let until):
            next = until.milliseconds
            // The connection failed, not the message: the attempt is given back and the row waits.
            try SQLiteStore.giveBack(db, claimed, next: until.milliseconds, reply: (record.replyCode, record.replyText), at: finished)
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_code, reply_text, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            claimed.message.id, claimed.message.attempts, record.startedAt.milliseconds, finished, record.outcome,
            record.replyCode, record.replyText, next,
        ])
    }

    private static func update(_ db: Database, _ claimed: ClaimedMessage, state: String, _ record: DeliveryRecord, next: Int64?, at: Int64) throws {
        try db.cachedStatement(
            sql: """
                UPDATE outbox SET state = :state, lease_until = NULL, updated_at = :at,
                    next_attempt_at = COALESCE(:next, next_attempt_at), last_reply_code = :code, last_reply = :reply
                WHERE id = :id AND state = 'sending' AND lease_until = :lease
                """
        ).execute(arguments: [
            "state": state, "at": at, "next": next, "code": record.replyCode, "reply": record.replyText, "id": claimed.message.id,
            "lease": claimed.message.leaseUntil?.milliseconds,
        ])
        try db.cachedStatement(sql: "UPDATE action_codes SET expires_at = created_at WHERE id = ?").execute(arguments: [claimed.codeID])
    }
}

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
            let statements = try RecordStatements(db)
            var next: [Int64?] = []
            next.reserveCapacity(batch.count)
            for (claimed, record) in batch {
                let (changed, nextAttempt) = try Self.record(db, claimed, record, policy: policy, statements)
                next.append(nextAttempt)
                // Only an outcome that moved the row is an event: a late result after another worker took it is not.
                if changed, let event = WebhookPayloads.event(record.decision) {
                    try emitWebhook(db, event, outboxID: claimed.message.id, at: record.finishedAt.milliseconds)
                }
            }
            // Every attempt, in multi-row statements.
            try Self.attempts.run(db, count: batch.count) { statement, row, first in
                let (claimed, record) = batch[row]
                statement.bind(first, claimed.message.id)
                statement.bind(first + 1, Int64(claimed.message.attempts))
                statement.bind(first + 2, record.startedAt.milliseconds)
                statement.bind(first + 3, record.finishedAt.milliseconds)
                statement.bind(first + 4, record.outcome)
                statement.bind(first + 5, record.replyCode.map(Int64.init))
                statement.bind(first + 6, record.replyText)
                statement.bind(first + 7, next[row])
            }
        }
    }

    private static let attempts = MultiRowInsert(
        "INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_code, reply_text, next_attempt_at) VALUES ",
        columns: 8)

    /// `sent`, unless a bounce or complaint about this send came back before it was recorded (a local MTA can
    /// bounce within milliseconds): the claim set `updated_at`, and every report since is about this send.
    private static let sentState = """
        COALESCE((SELECT CASE WHEN MAX(f.kind = 'complaint') THEN 'complained' ELSE 'bounced' END FROM mail_feedback f
            WHERE f.outbox_id = outbox.id AND f.kind != 'unsubscribe' AND f.received_at >= outbox.updated_at HAVING COUNT(*) > 0), 'sent')
        """

    /// The statements every outcome runs, prepared once per batch and bound through SQLite's C API
    /// (GRDB's named arguments built and hashed a dictionary per statement and row).
    private struct RecordStatements {
        let sent: BoundStatement
        let codeExpiry: BoundStatement

        init(_ db: Database) throws {
            sent = try BoundStatement(
                db,
                sql: """
                    UPDATE outbox SET state = \(sentState), sent_at = ?1, lease_until = NULL, updated_at = ?1,
                        last_reply_code = ?2, last_reply = ?3
                    WHERE id = ?4 AND state = 'sending' AND lease_until = ?5
                    """)
            codeExpiry = try BoundStatement(db, sql: "UPDATE action_codes SET expires_at = ?1 WHERE id = ?2")
        }
    }

    /// Moves the row (and its code) for one outcome; returns whether it moved (this claim still held it) and the
    /// attempt's `next_attempt_at`. The attempt itself is inserted with the batch's.
    private static func record(
        _ db: Database, _ claimed: ClaimedMessage, _ record: DeliveryRecord, policy: ClaimPolicy, _ statements: RecordStatements
    ) throws -> (changed: Bool, next: Int64?) {
        let finished = record.finishedAt.milliseconds
        let replyCode = record.replyCode.map(Int64.init)
        let next: Int64?
        var changed = false
        switch record.decision {
        case .sent:
            next = nil
            let sent = statements.sent
            sent.bind(1, finished)
            sent.bind(2, replyCode)
            sent.bind(3, record.replyText)
            sent.bind(4, claimed.message.id)
            sent.bind(5, claimed.message.leaseUntil?.milliseconds)
            changed = try sent.run() > 0
            let lifetime = claimed.message.linkLifetime ?? policy.lifetime(claimed.message.kind)
            statements.codeExpiry.bind(1, finished + Int64(lifetime * 1000))
            statements.codeExpiry.bind(2, claimed.codeID)
            try statements.codeExpiry.run()
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
            try SQLiteStore.giveBack(db, claimed, next: until.milliseconds, reply: (record.replyCode, record.replyText), at: finished)
        }
        return (changed, next)
    }

    private static func update(_ db: Database, _ claimed: ClaimedMessage, state: String, _ record: DeliveryRecord, next: Int64?, at: Int64) throws
        -> Bool
    {
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
        let changed = db.changesCount > 0
        try db.cachedStatement(sql: "UPDATE action_codes SET expires_at = created_at WHERE id = ?").execute(arguments: [claimed.codeID])
        return changed
    }
}

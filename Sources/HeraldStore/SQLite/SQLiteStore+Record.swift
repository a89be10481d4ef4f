import Foundation
import GRDB
import HeraldCore

/// The SQLite machinery of `record` (`Ledger/Record.swift`): sends and attempts bound through SQLite's C API.
extension SQLiteStore {
    /// One send at a time, through two statements prepared once per batch and bound through SQLite's C API
    /// (GRDB's named arguments built and hashed a dictionary per statement and row).
    static func recordSent(_ db: Database, _ batch: RecordBatch, policy: ClaimPolicy) throws -> [Bool] {
        let sent = try BoundStatement(db, sql: sentRow)
        let codeExpiry = try BoundStatement(db, sql: "UPDATE action_codes SET expires_at = ?1 WHERE id = ?2")
        var moved: [Bool] = []
        moved.reserveCapacity(batch.count)
        for (claimed, record) in batch {
            guard case .sent = record.decision else {
                moved.append(false)
                continue
            }
            let finished = record.finishedAt.milliseconds
            sent.bind(1, finished)
            sent.bind(2, record.replyCode.map(Int64.init))
            sent.bind(3, record.replyText)
            sent.bind(4, claimed.message.id)
            sent.bind(5, claimed.message.leaseUntil?.milliseconds)
            moved.append(try sent.run() > 0)
            codeExpiry.bind(1, Self.codeExpiry(claimed.message, policy: policy, from: finished))
            codeExpiry.bind(2, claimed.codeID)
            try codeExpiry.run()
        }
        return moved
    }

    private static let sentRow = """
        UPDATE outbox SET state = \(sentState("outbox")), sent_at = ?1, lease_until = NULL, updated_at = ?1,
            last_reply_code = ?2, last_reply = ?3
        WHERE id = ?4 AND state = 'sending' AND lease_until = ?5
        """

    /// Every attempt, in multi-row statements.
    static func insertAttempts(_ db: Database, _ batch: RecordBatch, next: [Int64?]) throws {
        try attempts.run(db, count: batch.count) { statement, row, first in
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

    private static let attempts = MultiRowInsert(
        "INSERT INTO delivery_attempts (outbox_id, attempt, started_at, finished_at, outcome, reply_code, reply_text, next_attempt_at) VALUES ",
        columns: 8)
}

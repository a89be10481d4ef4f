import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, now: Date) throws -> Int64 {
        let at = now.milliseconds
        return try writeDurably { db in
            if let throttle {
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT COUNT(*) AS sent, MAX(queued_at) AS latest FROM outbox
                        WHERE recipient = ? AND action = ? AND queued_at > ? AND campaign_id IS NULL
                        """, arguments: [request.recipient.value, request.kind.rawValue, at - 86_400_000])!
                if let latest = row["latest"] as Int64?, at - latest < Int64(throttle.cooldown * 1000) {
                    throw HeraldError(.tooManyAttempts, "")
                }
                if (row["sent"] as Int) >= throttle.dailyCap {
                    throw HeraldError(.tooManyAttempts, "")
                }
            }
            return try insert(db, request, encoder: JSONEncoder(), messageDomain: messageDomain, priority: 0, at: at)
        }
    }

    public func enqueue(_ requests: [ActionRequest], messageDomain: String, batchSize: Int, now: Date) throws -> Int {
        let encoder = JSONEncoder()
        let at = now.milliseconds
        var total = 0
        for start in stride(from: 0, to: requests.count, by: max(1, batchSize)) {
            let batch = requests[start..<min(start + max(1, batchSize), requests.count)]
            try writeDurably { db in
                for request in batch {
                    _ = try insert(db, request, encoder: encoder, messageDomain: messageDomain, priority: 0, at: at)
                }
            }
            total += batch.count
        }
        return total
    }

    private func insert(
        _ db: Database, _ request: ActionRequest, encoder: JSONEncoder, messageDomain: String, priority: Int, at: Int64
    ) throws -> Int64 {
        let settings = String(decoding: try encoder.encode(request.settings), as: UTF8.self)
        try db.cachedStatement(
            sql: """
                INSERT INTO outbox (action, recipient, email, new_email, locale, display_name, settings,
                                    message_id, priority, state, queued_at, next_attempt_at, due_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)
                """
        ).execute(arguments: [
            request.kind.rawValue, request.recipient.value, request.email.value, request.newEmail?.value,
            request.locale.value, request.displayName, settings, MessageID.next(domain: messageDomain),
            priority, at, at, at, at,
        ])
        return db.lastInsertedRowID
    }
}

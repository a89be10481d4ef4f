import Foundation
import GRDB
import HeraldCore

extension HeraldStore {
    /// Durably queues one action email and returns its outbox id.
    ///
    /// The row is committed before this returns, so the caller may acknowledge the request.
    /// `messageDomain` is the right-hand side of the row's Message-ID (the sender's domain).
    @discardableResult
    public func enqueue(_ request: ActionRequest, messageDomain: String, priority: Int = 0, now: Date = Date()) throws -> Int64 {
        let settings = String(decoding: try JSONEncoder().encode(request.settings), as: UTF8.self)
        let messageID = "<\(RandomToken.hex(bytes: 12)).herald@\(messageDomain)>"
        let at = now.milliseconds
        return try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox (action, recipient, email, new_email, locale, display_name, settings,
                                        message_id, priority, state, queued_at, next_attempt_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
                    """,
                arguments: [
                    request.kind.rawValue, request.recipient.value, request.email.value, request.newEmail?.value,
                    request.locale.value, request.displayName, settings, messageID, priority, at, at, at,
                ])
            return db.lastInsertedRowID
        }
    }
}

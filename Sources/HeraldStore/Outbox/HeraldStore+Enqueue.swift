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
        let encoder = JSONEncoder()
        return try writeDurably { db in
            try insert(db, request, encoder: encoder, messageDomain: messageDomain, priority: priority, at: now.milliseconds)
        }
    }

    /// Queues many requests, committing every `batchSize` rows; returns how many were queued.
    ///
    /// Each committed batch is durable; a failure part-way leaves earlier batches queued.
    @discardableResult
    public func enqueue(
        _ requests: some Sequence<ActionRequest>, messageDomain: String, priority: Int = 0, batchSize: Int = 1000,
        now: Date = Date()
    ) throws -> Int {
        var iterator = requests.makeIterator()
        var total = 0
        var batch: [ActionRequest] = []
        batch.reserveCapacity(batchSize)
        let encoder = JSONEncoder()
        let at = now.milliseconds
        repeat {
            batch.removeAll(keepingCapacity: true)
            while batch.count < batchSize, let next = iterator.next() { batch.append(next) }
            guard !batch.isEmpty else { break }
            try writeDurably { db in
                for request in batch {
                    _ = try insert(db, request, encoder: encoder, messageDomain: messageDomain, priority: priority, at: at)
                }
            }
            total += batch.count
        } while batch.count == batchSize
        return total
    }

    func insert(
        _ db: Database, _ request: ActionRequest, encoder: JSONEncoder, messageDomain: String, priority: Int, at: Int64
    ) throws -> Int64 {
        let settings = String(decoding: try encoder.encode(request.settings), as: UTF8.self)
        try db.cachedStatement(
            sql: """
                INSERT INTO outbox (action, recipient, email, new_email, locale, display_name, settings,
                                    message_id, priority, state, queued_at, next_attempt_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
                """
        ).execute(arguments: [
            request.kind.rawValue, request.recipient.value, request.email.value, request.newEmail?.value,
            request.locale.value, request.displayName, settings, MessageID.next(domain: messageDomain),
            priority, at, at, at,
        ])
        return db.lastInsertedRowID
    }
}

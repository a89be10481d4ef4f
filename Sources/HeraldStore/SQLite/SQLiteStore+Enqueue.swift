import Foundation
import GRDB
import HeraldCore

/// The SQLite machinery of queueing (`Ledger/Enqueue.swift`): the group commit, one cached insert per row.
extension SQLiteStore {
    /// The async writes wait for the group commit suspended.
    public var suspendsDurableWrites: Bool { true }

    /// `enqueue`, suspending the task rather than a thread while the group commit runs.
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) async throws
        -> Int64
    {
        let row = try QueuedRow(request, encoder: JSONEncoder(), messageDomain: messageDomain)
        return try await durable.write { db in try Self.queueOne(db, request, row, throttle: throttle, quota: quota, now: now) }
    }

    /// The group commit: concurrent requests share one commit and its fsync.
    func writeQueued<T>(_ body: (Database) throws -> T) throws -> T {
        try writeDurably(body)
    }

    static func insertQueued(_ db: Database, _ request: ActionRequest, _ row: QueuedRow, at: Int64) throws -> Int64 {
        _ = try insert(db, request, row, bulkID: nil, at: at)
        return db.lastInsertedRowID
    }

    static func insertQueued(_ db: Database, _ requests: ArraySlice<ActionRequest>, _ rows: [QueuedRow], bulkID: Int64?, at: Int64) throws
        -> Int
    {
        var inserted = 0
        for (request, row) in zip(requests, rows) {
            if try insert(db, request, row, bulkID: bulkID, at: at) { inserted += 1 }
        }
        return inserted
    }

    /// Inserts one queued row; false when `bulkID` has already queued this recipient.
    private static func insert(_ db: Database, _ request: ActionRequest, _ row: QueuedRow, bulkID: Int64?, at: Int64) throws -> Bool {
        try db.cachedStatement(
            sql: """
                INSERT INTO outbox (action, recipient, email, new_email, locale, display_name, settings,
                                    message_id, priority, state, queued_at, next_attempt_at, due_at, updated_at, bulk_id, recipient_key)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 'queued', ?, ?, ?, ?, ?, ?)
                ON CONFLICT (bulk_id, recipient) WHERE bulk_id IS NOT NULL DO NOTHING
                """
        ).execute(arguments: [
            request.kind.rawValue, request.recipient.value, request.email.value, request.newEmail?.value,
            request.locale.value, request.displayName, row.settings, row.messageID,
            at, at, at, at, bulkID, request.recipientKey,
        ])
        return db.changesCount > 0
    }
}

import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) throws
        -> Int64
    {
        let row = try QueuedRow(request, encoder: JSONEncoder(), messageDomain: messageDomain)
        return try writeDurably { db in try queueOne(db, request, row, throttle: throttle, quota: quota, now: now) }
    }

    /// The async writes wait for the group commit suspended.
    public var suspendsDurableWrites: Bool { true }

    /// The same, suspending the task rather than a thread while the group commit runs.
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) async throws
        -> Int64
    {
        let row = try QueuedRow(request, encoder: JSONEncoder(), messageDomain: messageDomain)
        return try await durable.write { db in try self.queueOne(db, request, row, throttle: throttle, quota: quota, now: now) }
    }

    /// What a queued row holds beyond the request's own fields, made before the durable write: the group commit's
    /// thread runs every request's write in turn, and the settings' JSON was a sixth of its time in the insert.
    struct QueuedRow: Sendable {
        let settings: String
        let messageID: String

        init(_ request: ActionRequest, encoder: JSONEncoder, messageDomain: String) throws {
            settings = String(decoding: try encoder.encode(request.settings), as: UTF8.self)
            messageID = MessageID.next(domain: messageDomain)
        }
    }

    /// One request's checks and insert, inside a durable write; returns the row's id.
    private func queueOne(_ db: Database, _ request: ActionRequest, _ row: QueuedRow, throttle: SendThrottle?, quota: SendQuota?, now: Date)
        throws -> Int64
    {
        let at = now.milliseconds
        let key = request.recipient.throttleKey
        if let throttle {
            try Self.checkCooldown(db, throttle, key: key, at: at, SendLimits.queuedCooldown(request, key: key, at: at))
        }
        if let quota { try Self.charge(db, quota, at: at) }
        // A row without a bulk key never conflicts, so it is always inserted.
        _ = try insert(db, request, row, bulkID: nil, at: at)
        return db.lastInsertedRowID
    }

    public func enqueue(_ requests: [ActionRequest], bulkKey: String?, messageDomain: String, batchSize: Int, now: Date) throws
        -> BulkEnqueueResult
    {
        let encoder = JSONEncoder()
        let at = now.milliseconds
        let size = max(1, batchSize)
        var committed = BulkEnqueueResult()
        var bulkID: Int64?
        for start in stride(from: 0, to: requests.count, by: size) {
            let batch = requests[start..<min(start + size, requests.count)]
            do {
                // Made before the write, as for a single request: the group commit's thread only runs the SQL.
                let rows = try batch.map { try QueuedRow($0, encoder: encoder, messageDomain: messageDomain) }
                let inserted = try writeDurably { db in
                    if let bulkKey, bulkID == nil { bulkID = try Self.bulkSend(db, key: bulkKey, at: at) }
                    var inserted = 0
                    for (request, row) in zip(batch, rows) {
                        if try insert(db, request, row, bulkID: bulkID, at: at) { inserted += 1 }
                    }
                    return inserted
                }
                committed.newlyQueued += inserted
                committed.alreadyQueued += batch.count - inserted
            } catch {
                throw BulkEnqueueFailure(committed: committed, requested: requests.count, error: error)
            }
        }
        return committed
    }

    /// The id of the bulk send with this key, recorded on first use (rows refer to it by a small integer).
    private static func bulkSend(_ db: Database, key: String, at: Int64) throws -> Int64 {
        try db.execute(sql: "INSERT INTO bulk_sends (key, created_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", arguments: [key, at])
        return try Int64.fetchOne(db, sql: "SELECT id FROM bulk_sends WHERE key = ?", arguments: [key])!
    }

    /// Inserts one queued row; false when `bulkID` has already queued this recipient.
    private func insert(_ db: Database, _ request: ActionRequest, _ row: QueuedRow, bulkID: Int64?, at: Int64) throws -> Bool {
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
            at, at, at, at, bulkID, request.recipient.throttleKey,
        ])
        return db.changesCount > 0
    }
}

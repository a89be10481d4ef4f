import Foundation
import HeraldCore

extension OutboxEngine {
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) throws
        -> Int64
    {
        let row = try QueuedRow(request, encoder: JSONEncoder(), messageDomain: messageDomain)
        return try writeQueued { db in try Self.queueOne(db, request, row, throttle: throttle, quota: quota, now: now) }
    }

    /// One request's checks and insert, inside the engine's durable write; returns the row's id.
    ///
    /// The checks and the insert share the transaction: on PostgreSQL a READ COMMITTED one in which the throttle's
    /// advisory lock on the recipient's key makes a second request for it wait and then see the first one's row, and
    /// the quota counts by upsert first, so requests for different recipients never fail each other's serialization.
    static func queueOne(_ db: Session, _ request: ActionRequest, _ row: QueuedRow, throttle: SendThrottle?, quota: SendQuota?, now: Date)
        throws -> Int64
    {
        let at = now.milliseconds
        let key = request.recipientKey
        if let throttle {
            try lockThrottle(db, key: key)
            try checkCooldown(db, throttle, key: key, at: at, SendLimits.queuedCooldown(request, key: key, at: at))
        }
        if let quota { try charge(db, quota, at: at) }
        // A row without a bulk key never conflicts, so it is always inserted.
        return try insertQueued(db, request, row, at: at)
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
                // The transaction may run again (PostgreSQL): the bulk id it used is kept only once it committed, so a
                // rolled-back attempt never leaves the next batch an id that does not exist.
                let known = bulkID
                let (inserted, usedBulkID) = try writeQueued { db -> (Int, Int64?) in
                    var id = known
                    if let bulkKey, id == nil { id = try Self.bulkSend(db, key: bulkKey, at: at) }
                    return (try Self.insertQueued(db, batch, rows, bulkID: id, at: at), id)
                }
                bulkID = usedBulkID
                committed.newlyQueued += inserted
                committed.alreadyQueued += batch.count - inserted
            } catch {
                throw BulkEnqueueFailure(committed: committed, requested: requests.count, error: error)
            }
        }
        return committed
    }

    /// The id of the bulk send with this key, recorded on first use (rows refer to it by a small integer).
    private static func bulkSend(_ db: Session, key: String, at: Int64) throws -> Int64 {
        try db.execute("INSERT INTO bulk_sends (key, created_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, at])
        guard let id = try db.value("SELECT id FROM bulk_sends WHERE key = ?", [key], as: Int64.self) else {
            throw HeraldError(.unavailable, "ledger unavailable: bulk send \(key) vanished while it was recorded")
        }
        return id
    }
}

/// What a queued row holds beyond the request's own fields, made before the durable write: SQLite's group commit's
/// thread runs every request's write in turn, and the settings' JSON was a sixth of its time in the insert.
struct QueuedRow: Sendable {
    let settings: String
    let messageID: String

    init(_ request: ActionRequest, encoder: JSONEncoder, messageDomain: String) throws {
        settings = String(decoding: try encoder.encode(request.settings), as: UTF8.self)
        messageID = MessageID.next(domain: messageDomain)
    }
}

import Foundation
import HeraldCore

extension PostgresStore {
    /// Queues one request. The throttle and quota checks and the insert share one transaction; it runs at
    /// READ COMMITTED with explicit locks rather than SERIALIZABLE, so that requests for different recipients and
    /// bulk inserts never fail each other's serialization: the throttle's advisory lock on the recipient's key makes
    /// a second request for it wait and then see the first one's row, and the quota counts by upsert first.
    public func enqueue(_ request: ActionRequest, messageDomain: String, throttle: SendThrottle?, quota: SendQuota?, now: Date) throws
        -> Int64
    {
        let at = now.milliseconds
        let key = request.recipient.throttleKey
        return try pool.write(.readCommitted) { db in
            try Self.notifyQueued(db)
            if let throttle {
                try Self.lockThrottle(db, key: key)
                try Self.checkCooldown(db, throttle, key: key, at: at, SendLimits.queuedCooldown(request, key: key, at: at))
            }
            if let quota { try Self.charge(db, quota, at: at) }
            // A row without a bulk key never conflicts, so it is always inserted.
            let ids = try insert(db, [request], bulkID: nil, encoder: JSONEncoder(), messageDomain: messageDomain, at: at)
            guard let id = ids.first else {
                throw HeraldError(.unavailable, "ledger unavailable: the outbox insert returned no id")
            }
            return id
        }
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
                // The transaction may run again (a lost serialization race): the bulk id it used is kept only once
                // it committed, so a rolled-back attempt never leaves the next batch an id that does not exist.
                let known = bulkID
                // READ COMMITTED: the only check is the bulk key's uniqueness, which ON CONFLICT settles.
                let (inserted, usedBulkID) = try pool.write(.readCommitted) { db -> (Int, Int64?) in
                    try Self.notifyQueued(db)
                    var id = known
                    if let bulkKey, id == nil { id = try Self.bulkSend(db, key: bulkKey, at: at) }
                    let ids = try insert(db, batch, bulkID: id, encoder: encoder, messageDomain: messageDomain, at: at)
                    return (ids.count, id)
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
    private static func bulkSend(_ db: PostgresSession, key: String, at: Int64) throws -> Int64 {
        try db.execute("INSERT INTO bulk_sends (key, created_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, at])
        guard let id = try db.fetchValue("SELECT id FROM bulk_sends WHERE key = ?", [key], as: Int64.self) else {
            throw HeraldError(.unavailable, "ledger unavailable: bulk send \(key) vanished while it was recorded")
        }
        return id
    }

    /// Inserts queued rows, one statement for the whole batch, in the batch's order (ids ascend with it);
    /// returns the ids of the rows inserted: a request whose recipient `bulkID` has already queued is skipped.
    ///
    /// The values travel as one array per column (`unnest`); the nullable texts (`new_email`, `display_name`)
    /// travel with a 0/1 array saying which are present, as an array argument cannot hold NULL.
    private func insert(
        _ db: PostgresSession, _ requests: some Collection<ActionRequest>, bulkID: Int64?, encoder: JSONEncoder, messageDomain: String,
        at: Int64
    ) throws -> [Int64] {
        let count = requests.count
        var actions: [String] = []
        var recipients: [String] = []
        var emails: [String] = []
        var newEmails: [String] = []
        var hasNewEmail: [Int64] = []
        var locales: [String] = []
        var displayNames: [String] = []
        var hasDisplayName: [Int64] = []
        var settings: [String] = []
        var messageIDs: [String] = []
        var recipientKeys: [String] = []
        actions.reserveCapacity(count)
        recipients.reserveCapacity(count)
        emails.reserveCapacity(count)
        newEmails.reserveCapacity(count)
        hasNewEmail.reserveCapacity(count)
        locales.reserveCapacity(count)
        displayNames.reserveCapacity(count)
        hasDisplayName.reserveCapacity(count)
        settings.reserveCapacity(count)
        messageIDs.reserveCapacity(count)
        recipientKeys.reserveCapacity(count)
        for request in requests {
            actions.append(request.kind.rawValue)
            recipients.append(request.recipient.value)
            emails.append(request.email.value)
            newEmails.append(request.newEmail?.value ?? "")
            hasNewEmail.append(request.newEmail == nil ? 0 : 1)
            locales.append(request.locale.value)
            displayNames.append(request.displayName ?? "")
            hasDisplayName.append(request.displayName == nil ? 0 : 1)
            settings.append(String(decoding: try encoder.encode(request.settings), as: UTF8.self))
            messageIDs.append(MessageID.next(domain: messageDomain))
            recipientKeys.append(request.recipient.throttleKey)
        }
        return try db.fetchColumn(
            """
            INSERT INTO outbox (action, recipient, email, new_email, locale, display_name, settings,
                                message_id, priority, state, queued_at, next_attempt_at, due_at, updated_at, bulk_id, recipient_key)
            SELECT u.action, u.recipient, u.email, CASE WHEN u.has_new_email <> 0 THEN u.new_email END, u.locale,
                   CASE WHEN u.has_display_name <> 0 THEN u.display_name END, u.settings,
                   u.message_id, 0, 'queued', ?12::bigint, ?12::bigint, ?12::bigint, ?12::bigint, ?13::bigint, u.recipient_key
            FROM unnest(?1::text[], ?2::text[], ?3::text[], ?4::text[], ?5::bigint[], ?6::text[], ?7::text[], ?8::bigint[],
                        ?9::text[], ?10::text[], ?11::text[])
                 WITH ORDINALITY AS u(action, recipient, email, new_email, has_new_email, locale, display_name, has_display_name,
                                      settings, message_id, recipient_key, ord)
            ORDER BY u.ord
            ON CONFLICT (bulk_id, recipient) WHERE bulk_id IS NOT NULL DO NOTHING
            RETURNING id
            """,
            [
                actions, recipients, emails, newEmails, hasNewEmail, locales, displayNames, hasDisplayName,
                settings, messageIDs, recipientKeys, at, bulkID,
            ],
            as: Int64.self)
    }
}

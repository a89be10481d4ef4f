import Foundation
import HeraldCore

/// The PostgreSQL machinery of queueing (`Ledger/Enqueue.swift`): READ COMMITTED writes that notify the workers, a
/// batch's rows in one statement.
extension PostgresStore {
    /// READ COMMITTED: the only checks are the throttle's (under its advisory lock), the quota's (counted by upsert
    /// first) and the bulk key's uniqueness, which ON CONFLICT settles. Listening workers hear of the mail at commit.
    func writeQueued<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        try write(.locking) { db in
            try Self.announceQueued(db)
            return try body(db)
        }
    }

    static func insertQueued(_ db: PostgresSession, _ request: ActionRequest, _ row: QueuedRow, at: Int64) throws -> Int64 {
        guard let id = try insert(db, [request], [row], bulkID: nil, at: at).first else {
            throw HeraldError(.unavailable, "ledger unavailable: the outbox insert returned no id")
        }
        return id
    }

    static func insertQueued(
        _ db: PostgresSession, _ requests: ArraySlice<ActionRequest>, _ rows: [QueuedRow], bulkID: Int64?, at: Int64
    ) throws -> Int {
        try insert(db, requests, rows, bulkID: bulkID, at: at).count
    }

    /// Inserts queued rows, one statement for the whole batch, in the batch's order (ids ascend with it);
    /// returns the ids of the rows inserted: a request whose recipient `bulkID` has already queued is skipped.
    ///
    /// The values travel as one array per column (`unnest`); the nullable texts (`new_email`, `display_name`)
    /// travel with a 0/1 array saying which are present, as an array argument cannot hold NULL.
    private static func insert(
        _ db: PostgresSession, _ requests: some Collection<ActionRequest>, _ rows: [QueuedRow], bulkID: Int64?, at: Int64
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
        var recipientKeys: [String] = []
        actions.reserveCapacity(count)
        recipients.reserveCapacity(count)
        emails.reserveCapacity(count)
        newEmails.reserveCapacity(count)
        hasNewEmail.reserveCapacity(count)
        locales.reserveCapacity(count)
        displayNames.reserveCapacity(count)
        hasDisplayName.reserveCapacity(count)
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
            recipientKeys.append(request.recipientKey)
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
                rows.map(\.settings), rows.map(\.messageID), recipientKeys, at, bulkID,
            ],
            as: Int64.self)
    }
}

import Foundation
import HeraldCore

extension PostgresStore {
    /// The campaign called `name`, created with these settings if it does not exist yet.
    ///
    /// - Throws: `ARGUMENT_ERROR` when a campaign of that name exists for another action.
    public func campaign(
        named name: String, kind: ActionKind, settings: ActionCodeSettings, rate: Double?, startAt: Date, linkLifetime: TimeInterval?,
        source: String, now: Date
    ) throws -> Campaign {
        let settingsJSON = String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
        return try pool.write { db in
            if let row = try db.fetchOne("SELECT * FROM campaigns WHERE name = ?", [name]) {
                let existing = try Records.campaign(row)
                guard existing.kind == kind else {
                    throw HeraldError(.argumentError, "campaign '\(name)' already exists for \(existing.kind.rawValue)")
                }
                return existing
            }
            // A concurrent creation of the same name fails this transaction's serialization (or the UNIQUE
            // constraint); the retried transaction then finds the campaign above.
            guard
                let row = try db.fetchOne(
                    """
                    INSERT INTO campaigns (name, action, state, settings, rate, start_at, link_lifetime, source, created_at, updated_at)
                    VALUES (?, ?, 'active', ?, ?::double precision, ?, ?::double precision, ?, ?, ?)
                    RETURNING *
                    """,
                    [
                        name, kind.rawValue, settingsJSON, rate, startAt.milliseconds, linkLifetime, source, now.milliseconds,
                        now.milliseconds,
                    ])
            else {
                throw HeraldError(.notFound, "campaign '\(name)' was not created")
            }
            return try Records.campaign(row)
        }
    }

    /// The campaign with this id.
    ///
    /// - Throws: `NOT_FOUND`.
    public func campaign(id: Int64) throws -> Campaign {
        try pool.read { db in
            guard let row = try db.fetchOne("SELECT * FROM campaigns WHERE id = ?", [id]) else {
                throw HeraldError(.notFound, "no campaign \(id)")
            }
            return try Records.campaign(row)
        }
    }

    /// Every campaign, oldest first.
    public func campaigns() throws -> [Campaign] {
        try pool.read { db in try db.fetchAll("SELECT * FROM campaigns ORDER BY id").map(Records.campaign) }
    }

    /// Outbox rows per state for one campaign.
    public func counts(campaign id: Int64) throws -> [OutboxState: Int] {
        try pool.read { db in
            Records.stateCounts(try db.fetchAll("SELECT state, COUNT(*) AS n FROM outbox WHERE campaign_id = ? GROUP BY state", [id]))
        }
    }

    /// Stops the worker from sending the campaign's rows; they stay queued.
    public func pause(campaign id: Int64, now: Date) throws {
        try setState(id, .paused, from: [.active], now: now)
    }

    /// Lets the worker send again; with a rate, the remaining rows are spaced out from now.
    ///
    /// The time spent paused does not count against `worker.maxQueueLifetime`: waiting rows are due from now.
    public func resume(campaign id: Int64, now: Date) throws {
        try pool.write { db in
            try Self.notifyQueued(db)
            try setState(db, id, .active, from: [.paused, .active], now: now)
            guard let row = try db.fetchOne("SELECT * FROM campaigns WHERE id = ?", [id]) else {
                throw HeraldError(.notFound, "no campaign \(id)")
            }
            let campaign = try Records.campaign(row)
            if let rate = campaign.rate {
                // SQLite's CAST(real AS INTEGER) truncates; PostgreSQL's rounds, hence trunc().
                try db.execute(
                    """
                    WITH ranked AS (
                        SELECT id, ROW_NUMBER() OVER (ORDER BY next_attempt_at, id) - 1 AS n
                        FROM outbox WHERE campaign_id = :campaign AND state IN ('queued','deferred'))
                    UPDATE outbox SET next_attempt_at = GREATEST(outbox.next_attempt_at,
                        :now::bigint + CAST(trunc(ranked.n * :interval::double precision) AS BIGINT))
                    FROM ranked WHERE outbox.id = ranked.id
                    """, ["campaign": id, "now": now.milliseconds, "interval": 1000 / rate])
            }
            try db.execute(
                """
                UPDATE outbox SET due_at = GREATEST(COALESCE(due_at, 0), :now::bigint, CASE WHEN attempts = 0 THEN next_attempt_at ELSE 0 END)
                WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                """, ["campaign": id, "now": now.milliseconds])
        }
    }

    /// Cancels the campaign: every row not yet sent becomes `cancelled`; returns how many.
    @discardableResult
    public func cancel(campaign id: Int64, now: Date) throws -> Int {
        try pool.write { db in
            try setState(db, id, .cancelled, from: [.active, .paused], now: now)
            return try db.execute(
                """
                UPDATE outbox SET state = 'cancelled', updated_at = :now, last_reply = 'cancelled with the campaign'
                WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                """, ["campaign": id, "now": now.milliseconds])
        }
    }

    /// Queues a batch of a campaign's recipients in one durable transaction, up to ``recipientsPerInsert`` rows
    /// per INSERT.
    ///
    /// Each INSERT takes its rows as arrays (`unnest … WITH ORDINALITY`, inserted in order) and skips those
    /// whose address the campaign already has (`ON CONFLICT DO NOTHING`, which also skips an address repeated
    /// within the statement), returning the ids it added. When a chunk inserts fewer rows than it holds (an
    /// import resumed, or an address twice), each of its rows is looked up: one whose row was added now with
    /// its own line is imported, one found with its own line that was there already is already imported, and
    /// one found with another line is a duplicate. The added rows are then moved to their place in the
    /// schedule, which the skipped rows would otherwise leave gaps in.
    public func addRecipients(
        _ recipients: [CampaignRecipient], to campaign: Campaign, schedule: inout CampaignSchedule, messageDomain: String, now: Date
    ) throws -> [CampaignAddOutcome] {
        let settingsJSON = String(decoding: try JSONEncoder().encode(campaign.settings), as: UTF8.self)
        let startPosition = schedule.position
        let start = schedule.start.milliseconds
        let interval = schedule.interval * 1000
        let due = { (position: Int64) in start + Int64((Double(position) * interval).rounded()) }
        let messageIDs = MessageID.Maker(domain: messageDomain)
        guard !recipients.isEmpty else { return [] }
        // The transaction may run again after a serialization failure: everything it changes starts afresh inside.
        // READ COMMITTED: a recipient already in the campaign is settled by ON CONFLICT, not by a read.
        let (result, nextPosition) = try pool.write(.readCommitted) { db -> ([CampaignAddOutcome], Int64) in
            try Self.notifyQueued(db)
            var position = startPosition
            var outcomes: [CampaignAddOutcome] = []
            outcomes.reserveCapacity(recipients.count)
            var chunkStart = recipients.startIndex
            while chunkStart < recipients.endIndex {
                let chunk = recipients[chunkStart..<min(chunkStart + Self.recipientsPerInsert, recipients.endIndex)]
                chunkStart = chunk.endIndex
                var emails: [String] = [], locales: [String] = [], names: [String] = [], hasNames: [Int64] = []
                var messageIDList: [String] = [], dues: [Int64] = [], variables: [String] = [], hasVariables: [Int64] = []
                var lines: [Int64] = [], hasLines: [Int64] = []
                emails.reserveCapacity(chunk.count)
                locales.reserveCapacity(chunk.count)
                names.reserveCapacity(chunk.count)
                hasNames.reserveCapacity(chunk.count)
                messageIDList.reserveCapacity(chunk.count)
                dues.reserveCapacity(chunk.count)
                variables.reserveCapacity(chunk.count)
                hasVariables.reserveCapacity(chunk.count)
                lines.reserveCapacity(chunk.count)
                hasLines.reserveCapacity(chunk.count)
                var chunkPosition = position
                for recipient in chunk {
                    emails.append(recipient.email)
                    locales.append(recipient.locale.value)
                    names.append(recipient.displayName ?? "")
                    hasNames.append(recipient.displayName == nil ? 0 : 1)
                    messageIDList.append(messageIDs.next())
                    dues.append(due(chunkPosition))
                    variables.append(recipient.variablesJSON ?? "")
                    hasVariables.append(recipient.variablesJSON == nil ? 0 : 1)
                    lines.append(recipient.line.map(Int64.init) ?? 0)
                    hasLines.append(recipient.line == nil ? 0 : 1)
                    chunkPosition += 1
                }
                let added = try db.fetchColumn(
                    Self.insertRecipients,
                    [
                        "action": campaign.kind.rawValue, "settings": settingsJSON, "now": now.milliseconds, "campaign": campaign.id,
                        "link_lifetime": campaign.linkLifetime, "emails": emails, "locales": locales, "names": names,
                        "has_names": hasNames, "message_ids": messageIDList, "dues": dues, "variables": variables, "has_variables": hasVariables,
                        "lines": lines, "has_lines": hasLines,
                    ], as: Int64.self)
                if added.count == chunk.count {
                    position = chunkPosition
                    outcomes.append(contentsOf: repeatElement(.imported, count: chunk.count))
                } else {
                    try sortOut(chunk, added: Set(added), campaign: campaign.id, db, position: &position, due: due, into: &outcomes)
                }
            }
            return (outcomes, position)
        }
        schedule.position = nextPosition
        return result
    }

    /// The outcome of each row of a chunk that did not insert them all, with the added rows (`added`, the ids
    /// the chunk's INSERT returned) rescheduled at consecutive positions.
    private func sortOut(
        _ chunk: ArraySlice<CampaignRecipient>, added: Set<Int64>, campaign: Int64, _ db: PostgresSession, position: inout Int64,
        due: (Int64) -> Int64, into outcomes: inout [CampaignAddOutcome]
    ) throws {
        // One row per campaign and address (outbox_campaign_recipient), so the address finds it.
        var existing: [String: (id: Int64, line: Int?)] = [:]
        let addresses = Array(Set(chunk.map(\.email)))
        for row in try db.fetchAll(
            "SELECT id, recipient, source_line FROM outbox WHERE campaign_id = ? AND recipient = ANY(?::text[])", [campaign, addresses])
        {
            let recipient: String = row["recipient"]
            let id: Int64 = row["id"]
            let line: Int? = row["source_line"]
            existing[recipient] = (id, line)
        }
        // The new due time per id, the last one winning as with one UPDATE per row.
        var reschedule: [Int64: Int64] = [:]
        for recipient in chunk {
            guard let row = existing[recipient.email], row.line == recipient.line else {
                outcomes.append(.duplicate)
                continue
            }
            guard added.contains(row.id) else {
                outcomes.append(.alreadyImported)
                continue
            }
            reschedule[row.id] = due(position)
            position += 1
            outcomes.append(.imported)
        }
        guard !reschedule.isEmpty else { return }
        let ids = Array(reschedule.keys)
        let dues = ids.map { reschedule[$0] ?? 0 }
        try db.execute(
            """
            UPDATE outbox SET next_attempt_at = r.due, due_at = r.due
            FROM unnest(?::bigint[], ?::bigint[]) AS r(id, due) WHERE outbox.id = r.id
            """, [ids, dues])
    }

    /// Rows per INSERT: the rows travel as arrays, so a statement binds 15 parameters whatever its size; this
    /// only bounds one statement's memory. The importer's batches (20,000 rows) take one INSERT each.
    static let recipientsPerInsert = 20_000

    /// The INSERT of one chunk's rows, in order, skipping addresses the campaign has (or that the chunk repeats),
    /// returning the added ids. Arrays that may hold NULLs travel with a 0/1 array saying which values are set.
    private static let insertRecipients = """
        INSERT INTO outbox (action, recipient, email, locale, display_name, settings, message_id, priority,
            state, queued_at, next_attempt_at, due_at, updated_at, campaign_id, variables, link_lifetime, source_line)
        SELECT :action::text, r.email, r.email, r.locale, CASE WHEN r.has_name <> 0 THEN r.name END, :settings::text, r.message_id, 10,
            'queued', :now::bigint, r.due, r.due, :now::bigint, :campaign::bigint, CASE WHEN r.has_variables <> 0 THEN r.variables END,
            :link_lifetime::double precision, CASE WHEN r.has_line <> 0 THEN r.line END
        FROM unnest(:emails::text[], :locales::text[], :names::text[], :has_names::bigint[], :message_ids::text[], :dues::bigint[],
                    :variables::text[], :has_variables::bigint[], :lines::bigint[], :has_lines::bigint[])
            WITH ORDINALITY AS r(email, locale, name, has_name, message_id, due, variables, has_variables, line, has_line, n)
        ORDER BY r.n
        ON CONFLICT DO NOTHING
        RETURNING id
        """

    public func setRejected(campaign id: Int64, count: Int, now: Date) throws {
        try writeDurably { db in
            try db.execute("UPDATE campaigns SET rejected = ?, updated_at = ? WHERE id = ?", [count, now.milliseconds, id])
        }
    }

    public func campaignAccounts(unverifiedOnly: Bool) throws -> [(email: String, displayName: String?)] {
        try pool.read { db in
            // COLLATE "C": SQLite's byte order for the tie-break on uid.
            try db.fetchAll(
                """
                SELECT email, display_name FROM accounts
                WHERE email IS NOT NULL AND disabled = 0 \(unverifiedOnly ? "AND email_verified = 0" : "")
                ORDER BY created_at, uid COLLATE "C"
                """
            ).map { (email: $0["email"] as String, displayName: $0["display_name"] as String?) }
        }
    }

    /// Rows already queued for a campaign: where a resumed import continues its schedule.
    public func importedCount(campaign id: Int64) throws -> Int64 {
        try pool.read { db in
            try db.fetchValue("SELECT COUNT(*) FROM outbox WHERE campaign_id = ?", [id], as: Int64.self) ?? 0
        }
    }

    private func setState(_ id: Int64, _ state: Campaign.State, from: Set<Campaign.State>, now: Date) throws {
        try pool.write { db in try setState(db, id, state, from: from, now: now) }
    }

    private func setState(_ db: PostgresSession, _ id: Int64, _ state: Campaign.State, from: Set<Campaign.State>, now: Date) throws {
        guard let current = try db.fetchValue("SELECT state FROM campaigns WHERE id = ?", [id], as: String.self) else {
            throw HeraldError(.notFound, "no campaign \(id)")
        }
        guard let known = Campaign.State(rawValue: current), from.contains(known) else {
            throw HeraldError(.argumentError, "campaign \(id) is \(current); cannot make it \(state.rawValue)")
        }
        try db.execute("UPDATE campaigns SET state = ?, updated_at = ? WHERE id = ?", [state.rawValue, now.milliseconds, id])
    }
}

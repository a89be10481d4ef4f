import Foundation
import GRDB
import HeraldCore

extension SQLiteStore {
    /// The campaign called `name`, created with these settings if it does not exist yet.
    ///
    /// - Throws: `ARGUMENT_ERROR` when a campaign of that name exists for another action.
    public func campaign(
        named name: String, kind: ActionKind, settings: ActionCodeSettings, rate: Double?, startAt: Date, linkLifetime: TimeInterval?,
        source: String, now: Date
    ) throws -> Campaign {
        let settingsJSON = String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
        return try pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM campaigns WHERE name = ?", arguments: [name]) {
                let existing = try Records.campaign(row)
                guard existing.kind == kind else {
                    throw HeraldError(.argumentError, "campaign '\(name)' already exists for \(existing.kind.rawValue)")
                }
                return existing
            }
            try db.execute(
                sql: """
                    INSERT INTO campaigns (name, action, state, settings, rate, start_at, link_lifetime, source, created_at, updated_at)
                    VALUES (?, ?, 'active', ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    name, kind.rawValue, settingsJSON, rate, startAt.milliseconds, linkLifetime, source, now.milliseconds, now.milliseconds,
                ])
            return try Records.campaign(try Row.fetchOne(db, sql: "SELECT * FROM campaigns WHERE id = ?", arguments: [db.lastInsertedRowID])!)
        }
    }

    /// The campaign with this id.
    ///
    /// - Throws: `NOT_FOUND`.
    public func campaign(id: Int64) throws -> Campaign {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM campaigns WHERE id = ?", arguments: [id]) else {
                throw HeraldError(.notFound, "no campaign \(id)")
            }
            return try Records.campaign(row)
        }
    }

    /// Every campaign, oldest first.
    public func campaigns() throws -> [Campaign] {
        try pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM campaigns ORDER BY id").map(Records.campaign) }
    }

    /// Outbox rows per state for one campaign.
    public func counts(campaign id: Int64) throws -> [OutboxState: Int] {
        try pool.read { db in
            Records.stateCounts(
                try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM outbox WHERE campaign_id = ? GROUP BY state", arguments: [id]))
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
            try setState(db, id, .active, from: [.paused, .active], now: now)
            let campaign = try Records.campaign(try Row.fetchOne(db, sql: "SELECT * FROM campaigns WHERE id = ?", arguments: [id])!)
            if let rate = campaign.rate {
                try db.execute(
                    sql: """
                        WITH ranked AS (
                            SELECT id, ROW_NUMBER() OVER (ORDER BY next_attempt_at, id) - 1 AS n
                            FROM outbox WHERE campaign_id = :campaign AND state IN ('queued','deferred'))
                        UPDATE outbox SET next_attempt_at = MAX(outbox.next_attempt_at, :now + CAST(ranked.n * :interval AS INTEGER))
                        FROM ranked WHERE outbox.id = ranked.id
                        """, arguments: ["campaign": id, "now": now.milliseconds, "interval": 1000 / rate])
            }
            try db.execute(
                sql: """
                    UPDATE outbox SET due_at = MAX(COALESCE(due_at, 0), :now, CASE WHEN attempts = 0 THEN next_attempt_at ELSE 0 END)
                    WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                    """, arguments: ["campaign": id, "now": now.milliseconds])
        }
    }

    /// Cancels the campaign: every row not yet sent becomes `cancelled`; returns how many.
    @discardableResult
    public func cancel(campaign id: Int64, now: Date) throws -> Int {
        try pool.write { db in
            try setState(db, id, .cancelled, from: [.active, .paused], now: now)
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'cancelled', updated_at = :now, last_reply = 'cancelled with the campaign'
                    WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                    """, arguments: ["campaign": id, "now": now.milliseconds])
            return db.changesCount
        }
    }

    /// Queues a batch of a campaign's recipients in one durable transaction, up to ``recipientsPerInsert`` rows
    /// per INSERT.
    ///
    /// A multi-row INSERT shares one statement's set-up (cursors on seven b-trees, a statement journal) among
    /// its rows, and only the values that differ are bound per row. When a chunk inserts fewer rows than it
    /// holds (an import resumed, or an address twice), each of its rows is looked up: one with an id above the
    /// chunk's start and its own line was added now, one below it with its own line was there already, and one
    /// found with another line is a duplicate. The added rows are then moved to their place in the schedule,
    /// which the skipped rows would otherwise leave gaps in.
    public func addRecipients(
        _ recipients: [CampaignRecipient], to campaign: Campaign, schedule: inout CampaignSchedule, messageDomain: String, now: Date
    ) throws -> [CampaignAddOutcome] {
        let settingsJSON = String(decoding: try JSONEncoder().encode(campaign.settings), as: UTF8.self)
        var position = schedule.position
        let start = schedule.start.milliseconds
        let interval = schedule.interval * 1000
        let due = { (position: Int64) in start + Int64((Double(position) * interval).rounded()) }
        let messageIDs = MessageID.Maker(domain: messageDomain)
        guard !recipients.isEmpty else { return [] }
        let outcomes = try writeDurably { db -> [CampaignAddOutcome] in
            /// The INSERT of `rows` rows, with the values every row shares bound.
            func prepared(_ rows: Int) throws -> BoundStatement {
                let insert = try BoundStatement(db, sql: rows == Self.recipientsPerInsert ? Self.insertChunk : Self.insertRecipients(rows))
                insert.bind(1, campaign.kind.rawValue)
                insert.bind(2, settingsJSON)
                insert.bind(3, now.milliseconds)
                insert.bind(4, campaign.id)
                insert.bind(5, campaign.linkLifetime)
                return insert
            }
            var outcomes: [CampaignAddOutcome] = []
            outcomes.reserveCapacity(recipients.count)
            var lastID = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0
            var insert = try prepared(min(recipients.count, Self.recipientsPerInsert))
            var chunkStart = recipients.startIndex
            while chunkStart < recipients.endIndex {
                let chunk = recipients[chunkStart..<min(chunkStart + Self.recipientsPerInsert, recipients.endIndex)]
                chunkStart = chunk.endIndex
                if chunk.count < Self.recipientsPerInsert { insert = try prepared(chunk.count) }  // the last chunk
                var parameter: Int32 = 6
                var chunkPosition = position
                for recipient in chunk {
                    insert.bind(parameter, recipient.email)
                    insert.bind(parameter + 1, recipient.locale.value)
                    insert.bind(parameter + 2, recipient.displayName)
                    insert.bind(parameter + 3, messageIDs.next())
                    insert.bind(parameter + 4, due(chunkPosition))
                    insert.bind(parameter + 5, recipient.variablesJSON)
                    insert.bind(parameter + 6, recipient.line.map(Int64.init))
                    parameter += Self.valuesPerRecipient
                    chunkPosition += 1
                }
                let added = try insert.run()
                if added == chunk.count {
                    position = chunkPosition
                    outcomes.append(contentsOf: repeatElement(.imported, count: chunk.count))
                } else {
                    try sortOut(chunk, addedAfter: lastID, campaign: campaign.id, db, position: &position, due: due, into: &outcomes)
                }
                if added > 0 { lastID = db.lastInsertedRowID }
            }
            return outcomes
        }
        schedule.position = position
        return outcomes
    }

    /// The outcome of each row of a chunk that did not insert them all, with the added rows rescheduled
    /// at consecutive positions.
    private func sortOut(
        _ chunk: ArraySlice<CampaignRecipient>, addedAfter lastID: Int64, campaign: Int64, _ db: Database, position: inout Int64,
        due: (Int64) -> Int64, into outcomes: inout [CampaignAddOutcome]
    ) throws {
        let existing = try db.cachedStatement(sql: "SELECT id, source_line FROM outbox WHERE campaign_id = ? AND recipient = ?")
        let reschedule = try db.cachedStatement(sql: "UPDATE outbox SET next_attempt_at = ?, due_at = ? WHERE id = ?")
        for recipient in chunk {
            guard let row = try Row.fetchOne(existing, arguments: [campaign, recipient.email]),
                (row["source_line"] as Int?) == recipient.line
            else {
                outcomes.append(.duplicate)
                continue
            }
            let id: Int64 = row["id"]
            guard id > lastID else {
                outcomes.append(.alreadyImported)
                continue
            }
            try reschedule.execute(arguments: [due(position), due(position), id])
            position += 1
            outcomes.append(.imported)
        }
    }

    /// Rows per multi-row INSERT: 100 rows bind 605 parameters, well under SQLite's limit of 32,766.
    static let recipientsPerInsert = 100

    /// Values bound per row: address, locale, display name, message id, due time, variables, source line.
    private static let valuesPerRecipient: Int32 = 7

    private static let insertChunk = insertRecipients(recipientsPerInsert)

    /// `INSERT OR IGNORE` of `rows` campaign rows with numbered parameters: the five every row shares
    /// (?1 action, ?2 settings, ?3 now, ?4 campaign, ?5 link lifetime), then ``valuesPerRecipient`` per row.
    private static func insertRecipients(_ rows: Int) -> String {
        let values = (0..<rows).map { row in
            let p = 6 + row * Int(valuesPerRecipient)
            return "(?1, ?\(p), ?\(p), ?\(p + 1), ?\(p + 2), ?2, ?\(p + 3), 10, 'queued', ?3, ?\(p + 4), ?\(p + 4), ?3, ?4, ?\(p + 5), ?5, ?\(p + 6))"
        }
        return """
            INSERT OR IGNORE INTO outbox (action, recipient, email, locale, display_name, settings, message_id, priority,
                state, queued_at, next_attempt_at, due_at, updated_at, campaign_id, variables, link_lifetime, source_line)
            VALUES \(values.joined(separator: ", "))
            """
    }

    public func setRejected(campaign id: Int64, count: Int, now: Date) throws {
        try writeDurably { db in
            try db.execute(sql: "UPDATE campaigns SET rejected = ?, updated_at = ? WHERE id = ?", arguments: [count, now.milliseconds, id])
        }
    }

    public func campaignAccounts(unverifiedOnly: Bool) throws -> [(email: String, displayName: String?)] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT email, display_name FROM accounts
                    WHERE email IS NOT NULL AND disabled = 0 \(unverifiedOnly ? "AND email_verified = 0" : "") ORDER BY created_at, uid
                    """
            ).map { (email: $0["email"] as String, displayName: $0["display_name"] as String?) }
        }
    }

    /// Rows already queued for a campaign: where a resumed import continues its schedule.
    public func importedCount(campaign id: Int64) throws -> Int64 {
        try pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE campaign_id = ?", arguments: [id]) ?? 0
        }
    }

    private func setState(_ id: Int64, _ state: Campaign.State, from: Set<Campaign.State>, now: Date) throws {
        try pool.write { db in try setState(db, id, state, from: from, now: now) }
    }

    private func setState(_ db: Database, _ id: Int64, _ state: Campaign.State, from: Set<Campaign.State>, now: Date) throws {
        guard let current = try String.fetchOne(db, sql: "SELECT state FROM campaigns WHERE id = ?", arguments: [id]) else {
            throw HeraldError(.notFound, "no campaign \(id)")
        }
        guard let known = Campaign.State(rawValue: current), from.contains(known) else {
            throw HeraldError(.argumentError, "campaign \(id) is \(current); cannot make it \(state.rawValue)")
        }
        try db.execute(
            sql: "UPDATE campaigns SET state = ?, updated_at = ? WHERE id = ?", arguments: [state.rawValue, now.milliseconds, id])
    }
}

import Foundation
import GRDB
import HeraldCore

/// SQLite's campaign import: bound multi-row INSERTs, the hot path of a million-row import (the rest of campaigns
/// is `Ledger/Campaigns.swift`).
extension SQLiteStore {
    /// Queues a batch of a campaign's recipients in one durable transaction, up to ``recipientsPerInsert`` rows
    /// per INSERT.
    ///
    /// A multi-row INSERT shares one statement's set-up (cursors on seven b-trees, a statement journal) among
    /// its rows, and only the values that differ are bound per row. When a chunk inserts fewer rows than it
    /// holds (an import resumed, or an address twice), its rows are sorted out one by one (`CampaignImport`).
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
            try LedgerRetention.refuseIfPruned(db, campaign: campaign)
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

    /// The outcome of each row of a chunk that did not insert them all (`CampaignImport.sortOut`): a row with an
    /// id above `lastID` was added now. Its statements are cached: an import resumed runs them for every row.
    private func sortOut(
        _ chunk: ArraySlice<CampaignRecipient>, addedAfter lastID: Int64, campaign: Int64, _ db: Database, position: inout Int64,
        due: (Int64) -> Int64, into outcomes: inout [CampaignAddOutcome]
    ) throws {
        let existing = try db.cachedStatement(sql: "SELECT id, source_line FROM outbox WHERE campaign_id = ? AND recipient = ?")
        let reschedule = try db.cachedStatement(sql: "UPDATE outbox SET next_attempt_at = ?, due_at = ? WHERE id = ?")
        let moves = try CampaignImport.sortOut(
            chunk,
            found: { email in
                try Row.fetchOne(existing, arguments: [campaign, email]).map { row in (id: row["id"], line: row["source_line"]) }
            }, added: { $0 > lastID }, position: &position, due: due, into: &outcomes)
        for move in moves { try reschedule.execute(arguments: [move.due, move.due, move.id]) }
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
}

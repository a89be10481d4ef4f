import Foundation
import HeraldCore

/// PostgreSQL's campaign import: each chunk's rows travel as arrays in one INSERT (the rest of campaigns is
/// `Ledger/Campaigns.swift`).
extension PostgresStore {
    /// Queues a batch of a campaign's recipients in one durable transaction, up to ``recipientsPerInsert`` rows
    /// per INSERT.
    ///
    /// Each INSERT takes its rows as arrays (`unnest … WITH ORDINALITY`, inserted in order) and skips those
    /// whose address the campaign already has (`ON CONFLICT DO NOTHING`, which also skips an address repeated
    /// within the statement), returning the ids it added. When a chunk inserts fewer rows than it holds (an
    /// import resumed, or an address twice), its rows are sorted out (`CampaignImport`).
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
            try Self.announceQueued(db)
            try LedgerRetention.refuseIfPruned(db, campaign: campaign)
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

    /// The outcome of each row of a chunk that did not insert them all (`CampaignImport.sortOut`): the rows it
    /// added are those whose ids its INSERT returned (`added`). One read finds the chunk's rows, one UPDATE moves them.
    private func sortOut(
        _ chunk: ArraySlice<CampaignRecipient>, added: Set<Int64>, campaign: Int64, _ db: PostgresSession, position: inout Int64,
        due: (Int64) -> Int64, into outcomes: inout [CampaignAddOutcome]
    ) throws {
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
        let moves = CampaignImport.sortOut(
            chunk, found: { existing[$0] }, added: { added.contains($0) }, position: &position, due: due, into: &outcomes)
        guard !moves.isEmpty else { return }
        // The new due time per id, the last one winning as with one UPDATE per row.
        var reschedule: [Int64: Int64] = [:]
        for move in moves { reschedule[move.id] = move.due }
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
}

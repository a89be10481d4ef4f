import Foundation
import HeraldCore

/// Campaigns: creation, control and the reads an import needs. Queueing the recipients (`addRecipients`) is each
/// engine's own bulk insert (`SQLiteStore+Campaigns`, `PostgresStore+Campaigns`); how a chunk that skipped rows
/// is sorted out is `CampaignImport`.
extension LedgerEngine {
    /// The campaign called `name`, created with these settings if it does not exist yet.
    ///
    /// - Throws: `ARGUMENT_ERROR` when a campaign of that name exists for another action.
    public func campaign(
        named name: String, kind: ActionKind, settings: ActionCodeSettings, rate: Double?, startAt: Date, linkLifetime: TimeInterval?,
        source: String, now: Date
    ) throws -> Campaign {
        let settingsJSON = String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
        return try write { db in
            if let row = try db.fetchOne("SELECT * FROM campaigns WHERE name = ?", [name]) {
                let existing = try Records.campaign(row)
                guard existing.kind == kind else {
                    throw HeraldError(.argumentError, "campaign '\(name)' already exists for \(existing.kind.rawValue)")
                }
                return existing
            }
            // On PostgreSQL a concurrent creation of the same name fails this transaction's serialization (or the
            // UNIQUE constraint); the retried transaction then finds the campaign above.
            let real = db.dialect.parameter(.double)
            guard
                let row = try db.fetchOne(
                    """
                    INSERT INTO campaigns (name, action, state, settings, rate, start_at, link_lifetime, source, created_at, updated_at)
                    VALUES (?, ?, 'active', ?, \(real), ?, \(real), ?, ?, ?)
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

    /// Replaces the campaign's own templates with `files` (none: it uses the global templates).
    public func setTemplates(_ files: [TemplateFile], campaign id: Int64) throws {
        try write { db in
            try db.execute("DELETE FROM campaign_templates WHERE campaign_id = ?", [id])
            for file in files {
                try db.execute(
                    "INSERT INTO campaign_templates (campaign_id, locale, part, body) VALUES (?, ?, ?, ?)",
                    [id, file.locale.value, file.part, file.text])
            }
        }
    }

    /// The campaign's own templates; empty when it uses the global ones.
    public func campaignTemplates(campaign id: Int64) throws -> [TemplateFile] {
        try read { db in
            try db.fetchAll("SELECT locale, part, body FROM campaign_templates WHERE campaign_id = ? ORDER BY locale, part", [id]).map {
                plain in
                let row = RecordRow(plain)
                return TemplateFile(locale: try LocaleTag(row["locale"] as String), part: row["part"], text: row["body"])
            }
        }
    }

    /// The campaign with this id.
    ///
    /// - Throws: `NOT_FOUND`.
    public func campaign(id: Int64) throws -> Campaign {
        try read { db in
            guard let row = try db.fetchOne("SELECT * FROM campaigns WHERE id = ?", [id]) else {
                throw HeraldError(.notFound, "no campaign \(id)")
            }
            return try Records.campaign(row)
        }
    }

    /// Every campaign, oldest first.
    public func campaigns() throws -> [Campaign] {
        try read { db in try db.fetchAll("SELECT * FROM campaigns ORDER BY id", []).map(Records.campaign) }
    }

    /// Outbox rows per state for one campaign, with those pruned (`ledger.messageRetention`) in the state they left in.
    public func counts(campaign id: Int64) throws -> [OutboxState: Int] {
        try read { db in
            var counts: [OutboxState: Int] = [:]
            for tally in try Self.tallies(db, campaign: id) + Self.prunedTallies(db, campaign: id) {
                if let state = OutboxState(rawValue: tally.state) { counts[state, default: 0] += tally.count }
            }
            return counts
        }
    }

    public func campaignCounts() throws -> [Int64: [OutboxState: Int]] {
        try read { db in
            var counts: [Int64: [OutboxState: Int]] = [:]
            for tally in try Self.tallies(db) + Self.prunedTallies(db) where tally.campaign != 0 {
                if let state = OutboxState(rawValue: tally.state) { counts[tally.campaign, default: [:]][state, default: 0] += tally.count }
            }
            return counts
        }
    }

    /// Stops the worker from sending the campaign's rows; they stay queued.
    public func pause(campaign id: Int64, now: Date) throws {
        try write { db in try Self.setState(db, id, .paused, from: [.active], now: now) }
    }

    /// Lets the worker send again; with a rate, the remaining rows are spaced out from now.
    ///
    /// The time spent paused does not count against `worker.maxQueueLifetime`: waiting rows are due from now.
    public func resume(campaign id: Int64, now: Date) throws {
        try write { db in
            try Self.announceQueued(db)
            try Self.setState(db, id, .active, from: [.paused, .active], now: now)
            guard let row = try db.fetchOne("SELECT * FROM campaigns WHERE id = ?", [id]) else {
                throw HeraldError(.notFound, "no campaign \(id)")
            }
            let campaign = try Records.campaign(row)
            let dialect = db.dialect
            if let rate = campaign.rate {
                let offset = dialect.truncated("ranked.n * \(dialect.parameter("interval", .double))")
                let next = dialect.largestOf("outbox.next_attempt_at", "\(dialect.parameter("now", .bigint)) + \(offset)")
                try db.execute(
                    """
                    WITH ranked AS (
                        SELECT id, ROW_NUMBER() OVER (ORDER BY next_attempt_at, id) - 1 AS n
                        FROM outbox WHERE campaign_id = :campaign AND state IN ('queued','deferred'))
                    UPDATE outbox SET next_attempt_at = \(next)
                    FROM ranked WHERE outbox.id = ranked.id
                    """, ["campaign": id, "now": now.milliseconds, "interval": 1000 / rate])
            }
            let due = dialect.largestOf(
                "COALESCE(due_at, 0)", dialect.parameter("now", .bigint), "CASE WHEN attempts = 0 THEN next_attempt_at ELSE 0 END")
            try db.execute(
                """
                UPDATE outbox SET due_at = \(due)
                WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                """, ["campaign": id, "now": now.milliseconds])
        }
    }

    /// Cancels the campaign: every row not yet sent becomes `cancelled`; returns how many.
    @discardableResult
    public func cancel(campaign id: Int64, now: Date) throws -> Int {
        try write { db in
            try Self.setState(db, id, .cancelled, from: [.active, .paused], now: now)
            return try db.execute(
                """
                UPDATE outbox SET state = 'cancelled', updated_at = :now, last_reply = 'cancelled with the campaign'
                WHERE campaign_id = :campaign AND state IN ('queued','deferred')
                """, ["campaign": id, "now": now.milliseconds])
        }
    }

    public func setRejected(campaign id: Int64, count: Int, now: Date) throws {
        try writeDurably { db in
            _ = try db.execute("UPDATE campaigns SET rejected = ?, updated_at = ? WHERE id = ?", [count, now.milliseconds, id])
        }
    }

    public func campaignAccounts(unverifiedOnly: Bool, after: CampaignAccount?, limit: Int) throws -> [CampaignAccount] {
        try read { db in
            let bytewise = db.dialect.bytewise
            let page = after == nil ? "" : "AND (created_at > ? OR (created_at = ? AND uid\(bytewise) > ?))"
            let arguments: SQLArguments = after.map { [$0.createdAt, $0.createdAt, $0.uid] } ?? []
            return try db.rows(
                """
                SELECT uid, created_at, email, display_name FROM accounts
                WHERE email IS NOT NULL AND disabled = 0 \(unverifiedOnly ? "AND email_verified = 0" : "") \(page)
                ORDER BY created_at, uid\(bytewise) LIMIT \(max(0, limit))
                """, arguments
            ).map {
                CampaignAccount(
                    uid: $0["uid"], createdAt: $0["created_at"], email: $0["email"], displayName: $0["display_name"] as String?)
            }
        }
    }

    /// Rows already queued for a campaign: where a resumed import continues its schedule.
    public func importedCount(campaign id: Int64) throws -> Int64 {
        try read { db in
            try db.value("SELECT COUNT(*) FROM outbox WHERE campaign_id = ?", [id], as: Int64.self) ?? 0
        }
    }

    static func setState(_ db: Session, _ id: Int64, _ state: Campaign.State, from: Set<Campaign.State>, now: Date) throws {
        guard let current = try db.value("SELECT state FROM campaigns WHERE id = ?", [id], as: String.self) else {
            throw HeraldError(.notFound, "no campaign \(id)")
        }
        guard let known = Campaign.State(rawValue: current), from.contains(known) else {
            throw HeraldError(.argumentError, "campaign \(id) is \(current); cannot make it \(state.rawValue)")
        }
        try db.execute("UPDATE campaigns SET state = ?, updated_at = ? WHERE id = ?", [state.rawValue, now.milliseconds, id])
    }
}

/// What both engines' campaign imports share.
enum CampaignImport {
    /// The outcome of each row of a chunk whose INSERT skipped some (an import resumed, or an address twice), and
    /// the new due times of the rows it added, at consecutive positions from `position` (the skipped rows would
    /// otherwise leave gaps in the schedule).
    ///
    /// One row per campaign and address (`outbox_campaign_recipient`), so `found(address)` finds it (its id and
    /// source line). A row found with its own line was added now when `added(id)`, else it was there already; one
    /// found with another line is a duplicate. The due times come in order: a row found twice is moved twice, the
    /// last move winning.
    static func sortOut(
        _ chunk: ArraySlice<CampaignRecipient>, found: (String) throws -> (id: Int64, line: Int?)?, added: (Int64) -> Bool,
        position: inout Int64, due: (Int64) -> Int64, into outcomes: inout [CampaignAddOutcome]
    ) rethrows -> [(id: Int64, due: Int64)] {
        var moves: [(id: Int64, due: Int64)] = []
        for recipient in chunk {
            guard let row = try found(recipient.email), row.line == recipient.line else {
                outcomes.append(.duplicate)
                continue
            }
            guard added(row.id) else {
                outcomes.append(.alreadyImported)
                continue
            }
            moves.append((row.id, due(position)))
            position += 1
            outcomes.append(.imported)
        }
        return moves
    }
}

extension SQLDialect {
    /// The largest of values that are never NULL (SQLite's scalar `MAX`, PostgreSQL's `GREATEST`).
    fileprivate func largestOf(_ values: String...) -> String {
        switch self {
        case .sqlite: "MAX(\(values.joined(separator: ", ")))"
        case .postgres: "GREATEST(\(values.joined(separator: ", ")))"
        }
    }

    /// A real number cut to a whole one toward zero: SQLite's `CAST(real AS INTEGER)` truncates, PostgreSQL's
    /// rounds, hence `trunc()`.
    fileprivate func truncated(_ expression: String) -> String {
        switch self {
        case .sqlite: "CAST(\(expression) AS INTEGER)"
        case .postgres: "CAST(trunc(\(expression)) AS BIGINT)"
        }
    }
}

import Foundation
import HeraldCore

/// Message retention (`ledger.messageRetention`, migration v32): finished messages older than the retention, whose
/// links have expired, leave the ledger with their codes, attempts, link events, feedback and events, a batch at a
/// time.
///
/// What the deleted rows answered survives them:
/// - a campaign's counts and report: its rows by state go to the `pruned` rollup family, which `counts(campaign:)`
///   and `campaignCounts()` add back, and the report's other families never decrement on delete;
/// - a campaign is pruned only once none of its rows is left to send, and is then marked (`campaigns.pruned_at`),
///   so the import that made it cannot run again and mail everyone a second time;
/// - a sent (or possibly delivered) campaign message leaves a tombstone (its id, address, locale and campaign): its one-click unsubscribe
///   link and a late bounce still find the address;
/// - the newest creation time of a pruned code is kept (`ledger_marks`), so a link made before it that is no longer
///   in the ledger answers "expired" rather than "invalid".
enum LedgerRetention {
    /// A message a prune may delete: its campaign (0 for none) and state, for the pruned counts, and, when asked for,
    /// a mark that changes with anything its audit row shows (its last change, newest feedback and link event, and
    /// superseded codes).
    struct Candidate {
        let id: Int64
        let campaign: Int64
        let state: String
        let mark: String
    }

    static let migration = LedgerMigration(
        "v32: message retention",
        sqlite: [
            "ALTER TABLE campaigns ADD COLUMN pruned_at INTEGER",
            """
            CREATE TABLE outbox_tombstones (
                id INTEGER PRIMARY KEY, recipient TEXT NOT NULL, locale TEXT NOT NULL, campaign_id INTEGER NOT NULL)
            """,
            "CREATE TABLE ledger_marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        ],
        postgres: [
            "ALTER TABLE campaigns ADD COLUMN pruned_at BIGINT",
            """
            CREATE TABLE outbox_tombstones (
                id BIGINT PRIMARY KEY, recipient TEXT NOT NULL, locale TEXT NOT NULL, campaign_id BIGINT NOT NULL)
            """,
            "CREATE TABLE ledger_marks (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        ])

    /// The `ledger_marks` row of the newest pruned code's creation time, in microseconds (its key).
    static let prunedCodesMark = "pruned_codes"

    /// Refuses to queue rows for a campaign whose rows were pruned: those that would tell an import who was mailed
    /// are gone. Inside the import's transaction, so a prune and an import of one campaign never interleave: SQLite
    /// has one writer; on PostgreSQL the import writes the campaign's row, which a prune also writes, so a prune that
    /// judged the campaign finished from a snapshot older than the import's commit fails to serialize and runs again.
    static func refuseIfPruned(_ db: some LedgerSession, campaign: Campaign) throws {
        let read =
            switch db.dialect {
            case .sqlite: "SELECT pruned_at FROM campaigns WHERE id = ?"
            case .postgres: "UPDATE campaigns SET updated_at = updated_at WHERE id = ? RETURNING pruned_at"
            }
        guard let pruned = try db.value(read, [campaign.id], as: Int64.self) else { return }
        throw Campaign.prunedImportRefusal(id: campaign.id, name: campaign.name, prunedAt: Date(milliseconds: pruned))
    }
}

/// One step of a prune: how many messages it deleted, and where the next step starts (nil: the sweep is done).
public struct MessagePrune: Sendable, Hashable {
    public let deleted: Int
    public let next: Int64?

    public init(deleted: Int, next: Int64?) {
        self.deleted = deleted
        self.next = next
    }
}

extension LedgerEngine {
    /// Deletes the prunable messages among the `limit` rows after id `after`, with everything that refers to them, in
    /// one short transaction. A message is prunable when it is finished (not queued, deferred or sending), was
    /// first queued and last changed before `cutoff`, has no unused code that expires after `cutoff`, and, for a
    /// campaign's, when none of the campaign's rows is left to send. The sweep ends at the first row queued at or
    /// after `cutoff`: ids follow queueing time.
    ///
    /// With `archive`, the messages are chosen and their audit rows read in a snapshot, handed to `archive` with no
    /// lock held (when it throws, nothing is deleted), and then deleted in the transaction, those still prunable: the
    /// ledger's writer never waits on the audit's query or the archive's disk. A message that changed in between (its
    /// state, or a new bounce, click or superseded code) is archived and kept; it is archived again when pruned.
    public func pruneMessages(
        before cutoff: Date, after: Int64, limit: Int, now: Date, archive: (@Sendable ([AuditRow]) throws -> Void)? = nil
    ) throws -> MessagePrune {
        let cut = cutoff.milliseconds
        let page = "o.id > \(after) ORDER BY o.id LIMIT \(max(1, limit))"
        guard let archive else {
            return try write { db in
                let chosen = try Self.prunable(db, page, cut: cut, limit: limit, marked: false)
                try Self.deleteMessages(db, chosen.candidates, now: now)
                return MessagePrune(deleted: chosen.candidates.count, next: chosen.next)
            }
        }
        let (chosen, rows) = try read { db in
            let chosen = try Self.prunable(db, page, cut: cut, limit: limit, marked: true)
            guard !chosen.candidates.isEmpty else { return (chosen, [AuditRow]()) }
            var conditions = OutboxConditions(table: "o", arguments: ["now": now.milliseconds])
            conditions.add("o.id IN (\(chosen.candidates.map { String($0.id) }.joined(separator: ",")))")
            return (chosen, try db.fetchAll(Self.auditSQL(conditions, limit: chosen.candidates.count), conditions.sqlArguments).map(Records.audit))
        }
        guard !chosen.candidates.isEmpty else { return MessagePrune(deleted: 0, next: chosen.next) }
        try archive(rows)
        let archived = Dictionary(uniqueKeysWithValues: chosen.candidates.map { ($0.id, $0.mark) })
        let deleted = try write { db in
            let list = chosen.candidates.map { String($0.id) }.joined(separator: ",")
            // Only those whose archived line is still true: prunable, and with no new feedback, click or superseded
            // code since the snapshot.
            let still = try Self.prunable(db, "o.id IN (\(list)) ORDER BY o.id", cut: cut, limit: nil, marked: true).candidates
                .filter { archived[$0.id] == $0.mark }
            try Self.deleteMessages(db, still, now: now)
            return still.count
        }
        return MessagePrune(deleted: deleted, next: chosen.next)
    }

    /// The lease on the message sweep: `ledger_marks` rows named `message_sweep:<worker>` (between the prefix and
    /// the next name after it), valued when they run out, in milliseconds.
    private static var leases: (from: String, to: String) { ("message_sweep:", "message_sweep;") }

    /// Takes, or renews, `worker`'s lease on the message sweep until `now + ttl`; false while another worker's lease
    /// runs. One worker at a time sweeps a ledger, so workers sharing it neither delete the same rows at once nor
    /// archive them twice, and a worker without message retention never sweeps for the others.
    public func leaseMessageSweep(worker: String, now: Date, ttl: TimeInterval) throws -> Bool {
        let (from, to) = Self.leases
        let mine = from + worker
        return try write { db in
            try db.run("DELETE FROM ledger_marks WHERE name >= ? AND name < ? AND value < ?", [from, to, now.milliseconds])
            let holders = try db.column("SELECT name FROM ledger_marks WHERE name >= ? AND name < ?", [from, to], as: String.self)
            guard holders.allSatisfy({ $0 == mine }) else { return false }
            try db.run(
                "INSERT INTO ledger_marks (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [mine, now.addingTimeInterval(ttl).milliseconds])
            return true
        }
    }

    /// Gives up `worker`'s lease on the message sweep, if it holds it (a worker that stops cleanly).
    public func releaseMessageSweep(worker: String) throws {
        try write { db in _ = try db.run("DELETE FROM ledger_marks WHERE name = ?", [Self.leases.from + worker]) }
    }

    /// The prunable messages among the outbox rows `selection` picks (`o.id …`, ordered by id), and, for a page of
    /// `limit` rows, where the next page starts (nil at the first row queued at or after `cut`, or at the end).
    private static func prunable(
        _ db: Session, _ selection: String, cut: Int64, limit: Int?, marked: Bool
    ) throws -> (candidates: [LedgerRetention.Candidate], next: Int64?) {
        let marks =
            marked
            ? """
            , (SELECT MAX(f.id) FROM mail_feedback f WHERE f.outbox_id = o.id) AS last_feedback,
                (SELECT MAX(e.id) FROM link_events e JOIN action_codes c ON c.id = e.code_id WHERE c.outbox_id = o.id) AS last_event,
                (SELECT COUNT(*) FROM action_codes c WHERE c.outbox_id = o.id AND c.superseded_at IS NOT NULL) AS superseded
            """ : ""
        let rows = try db.rows(
            """
            SELECT o.id, o.state, o.updated_at, COALESCE(o.first_queued_at, o.queued_at) AS queued, o.campaign_id,
                (SELECT MAX(c.expires_at) FROM action_codes c
                 WHERE c.outbox_id = o.id AND c.redeemed_at IS NULL AND c.superseded_at IS NULL) AS live_until\(marks)
            FROM outbox o WHERE \(selection)
            """)
        var finished: [Int64: Bool] = [:]
        var candidates: [LedgerRetention.Candidate] = []
        var reachedTheNewer = false
        for row in rows {
            if (row["queued"] as Int64) >= cut {
                reachedTheNewer = true
                break
            }
            let state: String = row["state"]
            guard OutboxState(rawValue: state)?.isPending == false, (row["updated_at"] as Int64) < cut else { continue }
            // A link that still works (a long `--link-lifetime`) keeps its message until it has expired.
            if let liveUntil = row["live_until"] as Int64?, liveUntil >= cut { continue }
            if let campaign = row["campaign_id"] as Int64? {
                if finished[campaign] == nil { finished[campaign] = try campaignIsFinished(db, campaign) }
                guard finished[campaign] == true else { continue }
            }
            let mark =
                marked
                ? "\(row["updated_at"] as Int64) \(row["last_feedback"] as Int64? ?? 0) \(row["last_event"] as Int64? ?? 0) \(row["superseded"] as Int64)"
                : ""
            candidates.append(LedgerRetention.Candidate(id: row["id"], campaign: row["campaign_id"] as Int64? ?? 0, state: state, mark: mark))
        }
        let next = reachedTheNewer || limit.map { rows.count < $0 } ?? true ? nil : rows.last.map { $0["id"] as Int64 }
        return (candidates, next)
    }

    /// The newest creation time of a code that pruning deleted; nil when none was.
    public func prunedCodesThrough() throws -> Date? {
        try read { db in
            try db.value("SELECT value FROM ledger_marks WHERE name = ?", [LedgerRetention.prunedCodesMark], as: Int64.self)
                .map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
        }
    }

    /// A campaign none of whose rows is left to send (from its tallies).
    private static func campaignIsFinished(_ db: Session, _ campaign: Int64) throws -> Bool {
        try !tallies(db, campaign: campaign).contains { OutboxState(rawValue: $0.state)?.isPending == true && $0.count > 0 }
    }

    /// Deletes the messages `candidates` and what refers to them, child tables first; keeps the tombstones, their
    /// counts by campaign and state (the `pruned` rollups) and the newest pruned code's creation time.
    private static func deleteMessages(_ db: Session, _ candidates: [LedgerRetention.Candidate], now: Date) throws {
        guard !candidates.isEmpty else { return }
        var pruned: [Int64: [String: Int]] = [:]
        for candidate in candidates { pruned[candidate.campaign, default: [:]][candidate.state, default: 0] += 1 }
        let list = candidates.map { String($0.id) }.joined(separator: ",")
        let newestCode = try db.column("SELECT code_hash FROM action_codes WHERE outbox_id IN (\(list))", as: Data.self)
            .compactMap { ActionCode.key(ofLedgerKey: $0).map(Int64.init(bitPattern:)) }.max()
        try db.run("DELETE FROM link_events WHERE code_id IN (SELECT id FROM action_codes WHERE outbox_id IN (\(list)))")
        for table in ["action_codes", "delivery_attempts", "mail_feedback", "outbox_events"] {
            try db.run("DELETE FROM \(table) WHERE outbox_id IN (\(list))")
        }
        try db.run(
            """
            INSERT INTO outbox_tombstones (id, recipient, locale, campaign_id)
            SELECT id, recipient, locale, campaign_id FROM outbox
            WHERE id IN (\(list)) AND campaign_id IS NOT NULL AND (sent_at IS NOT NULL OR possibly_delivered <> 0)
            ON CONFLICT (id) DO NOTHING
            """)
        for (campaign, states) in pruned {
            for (state, count) in states {
                let values: SQLArguments = [LedgerRollups.Family.pruned.rawValue, campaign, Int64(0), state, count]
                switch db.dialect {
                case .sqlite:
                    try db.run(
                        """
                        INSERT INTO rollups (family, campaign, bucket, label, n) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (family, campaign, bucket, label) DO UPDATE SET n = rollups.n + excluded.n
                        """, values)
                case .postgres:
                    try db.run("INSERT INTO rollup_deltas (family, campaign, bucket, label, n) VALUES (?, ?, ?, ?, ?)", values)
                }
            }
            if campaign != 0 {
                try db.run("UPDATE campaigns SET pruned_at = COALESCE(pruned_at, ?) WHERE id = ?", [now.milliseconds, campaign])
            }
        }
        try db.run("DELETE FROM outbox WHERE id IN (\(list))")
        if let newestCode {
            try db.run(
                """
                INSERT INTO ledger_marks (name, value) VALUES (?, ?)
                ON CONFLICT (name) DO UPDATE
                SET value = CASE WHEN excluded.value > ledger_marks.value THEN excluded.value ELSE ledger_marks.value END
                """, [LedgerRetention.prunedCodesMark, newestCode])
        }
    }

    /// The pruned rows of one campaign (0: mail of none), or of all, as tallies by state (`action` empty).
    static func prunedTallies(_ db: Session, campaign: Int64? = nil) throws -> [OutboxTally] {
        let only = campaign == nil ? "" : "AND campaign = :campaign"
        let arguments: SQLArguments = ["family": LedgerRollups.Family.pruned.rawValue, "campaign": campaign ?? 0]
        let sql =
            switch db.dialect {
            case .sqlite: "SELECT campaign, label, n FROM rollups WHERE family = :family \(only)"
            case .postgres:
                """
                SELECT campaign, label, CAST(SUM(n) AS BIGINT) AS n FROM (
                    SELECT campaign, label, n FROM rollups WHERE family = :family \(only)
                    UNION ALL SELECT campaign, label, n FROM rollup_deltas WHERE family = :family \(only)) AS r
                GROUP BY campaign, label
                """
            }
        return try db.rows(sql, arguments).compactMap { row in
            let count = row["n"] as Int
            return count == 0 ? nil : OutboxTally(state: row["label"], action: "", campaign: row["campaign"], count: count)
        }
    }
}

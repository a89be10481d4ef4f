import Foundation
import GRDB
import HeraldCore

/// What `herald migrate --from sqlite:PATH` copied: rows per table, counted again on both sides.
public struct LedgerCopyReport: Sendable {
    public var tables: [(name: String, rows: Int)] = []
    public var total: Int { tables.reduce(0) { $0 + $1.rows } }
}

extension PostgresStore {
    /// The ledger's tables in an order that satisfies their foreign keys.
    static let copiedTables = [
        "campaigns", "campaign_templates", "bulk_sends", "accounts", "outbox", "action_codes", "delivery_attempts", "link_events", "refresh_tokens",
        "workers", "suppressed_sends", "send_counts", "abuse_counts", "federated_identities", "account_events", "suppressions",
        "mail_feedback", "outbox_events", "webhook_deliveries", "console_actions", "template_revisions", "outbox_tombstones",
        "ledger_marks", "rollups",
    ]

    /// - Throws: `INVALID_CONFIGURATION` when there is no file at `path` to copy from (checked before anything opens
    ///   it, since opening a SQLite ledger creates a missing file).
    public static func requireSQLiteFile(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw HeraldError(.invalidConfiguration, "--from sqlite:\(path): no such file")
        }
    }

    /// Copies a SQLite ledger (accounts, codes, outbox, attempts, events, campaigns, limits, webhooks) into this
    /// empty PostgreSQL ledger in one transaction, keeping every id, then counts every table on both sides.
    ///
    /// The SQLite file is opened read-only, as far as it is migrated: `herald migrate --from` brings it to this version's
    /// schema first. A column this version's PostgreSQL ledger lacks (a newer SQLite ledger) stops the copy.
    /// - Throws: `INVALID_CONFIGURATION` when the file is not a ledger or this ledger already holds mail or
    ///   accounts; `UNAVAILABLE` when a count differs after the copy (nothing is committed then).
    public func copy(fromSQLite path: String, progress: (String, Int) -> Void = { _, _ in }) throws -> LedgerCopyReport {
        try Self.requireSQLiteFile(path)
        var configuration = Configuration()
        configuration.readonly = true
        let source: DatabaseQueue
        do {
            source = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw HeraldError(.invalidConfiguration, "--from sqlite:\(path): \(error)")
        }
        return try pool.write(.serializable) { db in
            for table in ["outbox", "accounts", "campaigns"] {
                if let rows = try db.fetchValue("SELECT COUNT(*) FROM \(table)", as: Int64.self), rows > 0 {
                    throw HeraldError(
                        .invalidConfiguration, "the PostgreSQL ledger already holds \(rows) \(table) rows; copy into an empty one")
                }
            }
            // Summaries only (the rows they count are checked empty above): they arrive from SQLite as they are.
            try db.execute("DELETE FROM rollups")
            var report = LedgerCopyReport()
            for table in Self.copiedTables {
                let targetColumns = try db.fetchColumn(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = current_schema() "
                        + "ORDER BY ordinal_position", [table], as: String.self)
                let copied = try source.read { sqlite -> Int in
                    guard try sqlite.tableExists(table) else { return 0 }
                    let sourceColumns = Set(try sqlite.columns(in: table).map(\.name))
                    // A column the PostgreSQL ledger lacks would be lost: a newer SQLite ledger than this version knows.
                    let unknown = sourceColumns.subtracting(targetColumns).sorted()
                    guard unknown.isEmpty else {
                        throw HeraldError(
                            .invalidConfiguration,
                            "--from sqlite:\(path): \(table) has columns this version's PostgreSQL ledger lacks (\(unknown.joined(separator: ", "))); "
                                + "copy with the herald version that wrote it")
                    }
                    let columns = targetColumns.filter(sourceColumns.contains)
                    let list = columns.joined(separator: ", ")
                    let perBatch = max(1, 30_000 / max(1, columns.count))
                    let cursor = try Row.fetchCursor(sqlite, sql: "SELECT \(list) FROM \(table)")
                    var batch: [[SQLValue]] = []
                    var count = 0
                    func flush() throws {
                        guard !batch.isEmpty else { return }
                        var values: [SQLValue] = []
                        values.reserveCapacity(batch.count * columns.count)
                        var tuples: [String] = []
                        for row in batch {
                            let start = values.count
                            values += row
                            tuples.append("(" + (1...columns.count).map { "$\(start + $0)" }.joined(separator: ", ") + ")")
                        }
                        try db.execute("INSERT INTO \(table) (\(list)) VALUES " + tuples.joined(separator: ", "), SQLArguments(values))
                        count += batch.count
                        progress(table, count)
                        batch.removeAll(keepingCapacity: true)
                    }
                    while let row = try cursor.next() {
                        batch.append(columns.indices.map { SQLValue.fromDatabaseValue(row[$0] as DatabaseValue) ?? .null })
                        if batch.count == perBatch { try flush() }
                    }
                    try flush()
                    let sourceCount = try Int.fetchOne(sqlite, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
                    guard sourceCount == count else {
                        throw HeraldError(.unavailable, "\(table): read \(count) of \(sourceCount) rows; nothing was copied")
                    }
                    return count
                }
                let landed = try db.fetchValue("SELECT COUNT(*) FROM \(table)", as: Int.self) ?? 0
                guard landed == copied else {
                    throw HeraldError(.unavailable, "\(table): \(landed) rows arrived of \(copied); nothing was copied")
                }
                if targetColumns.contains("id"), table != "workers" {
                    // New rows continue after the copied ids.
                    try db.execute(
                        "SELECT setval(pg_get_serial_sequence('\(table)', 'id'), GREATEST((SELECT MAX(id) FROM \(table)), 0) + 1, false)")
                }
                report.tables.append((table, copied))
            }
            // The rollups arrive as SQLite kept them: they hold what pruned rows left behind (a pruned campaign's
            // report) as well as what the rows say. What the triggers counted of the copied rows (codes arrive
            // redeemed, messages attempted, past the triggers that count as things happen) is dropped.
            try db.execute("DELETE FROM rollup_deltas")
            return report
        }
    }
}

import Foundation
import HeraldCore

extension LedgerEngine {
    @discardableResult
    public func recordConsoleAction(_ action: ConsoleAction) throws -> Int64 {
        try write { db in
            try db.value(
                """
                INSERT INTO console_actions (at, actor, action, target, detail, result)
                VALUES (:at, :actor, :action, :target, :detail, :result) RETURNING id
                """,
                [
                    "at": action.at.milliseconds, "actor": action.actor, "action": action.action, "target": action.target,
                    "detail": action.detail, "result": action.result.rawValue,
                ], as: Int64.self) ?? 0
        }
    }

    /// Walks the primary key backwards from `before`: a page costs `limit` rows read, plus the rows skipped outside
    /// the time window (the log grows by operators' clicks, not by mail).
    public func consoleActions(_ query: ConsoleActionQuery) throws -> [ConsoleAction] {
        try read { db in
            let d = db.dialect
            return try db.rows(
                """
                SELECT * FROM console_actions
                WHERE (\(d.parameter("before", .bigint)) IS NULL OR id < :before)
                  AND (\(d.parameter("since", .bigint)) IS NULL OR at >= :since)
                  AND (\(d.parameter("until", .bigint)) IS NULL OR at <= :until)
                ORDER BY id DESC LIMIT :limit
                """,
                [
                    "before": query.before, "since": query.since?.milliseconds, "until": query.until?.milliseconds,
                    "limit": max(1, min(query.limit, 10_000)),
                ]
            ).map { row in
                ConsoleAction(
                    id: row["id"], at: Date(milliseconds: row["at"]), actor: row["actor"], action: row["action"], target: row["target"],
                    detail: row["detail"], result: ConsoleAction.Result(rawValue: row["result"]) ?? .failed)
            }
        }
    }
}

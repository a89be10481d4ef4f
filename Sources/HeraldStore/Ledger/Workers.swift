import Foundation
import HeraldCore

extension OutboxEngine {
    public func register(_ worker: WorkerProcess) throws {
        try write { db in
            // Stopped workers are kept a day for `herald` operators to read, then forgotten.
            try db.execute("DELETE FROM workers WHERE stopped_at < ?", [worker.startedAt.milliseconds - 86_400_000])
            try db.execute(
                "INSERT INTO workers (id, host, pid, started_at, heartbeat_at) VALUES (:id, :host, :pid, :started, \(db.dialect.clock(or: "now")))",
                [
                    "id": worker.id, "host": worker.host, "pid": Int64(worker.pid), "started": worker.startedAt.milliseconds,
                    "now": worker.heartbeatAt.milliseconds,
                ])
        }
    }

    public func heartbeat(worker id: String, now: Date) throws -> Bool {
        try write { db in
            try db.execute(
                "UPDATE workers SET heartbeat_at = \(db.dialect.clock(or: "now")) WHERE id = :id AND stopped_at IS NULL",
                ["id": id, "now": now.milliseconds]) == 1
        }
    }

    public func reportRelay(worker id: String, problem: RelayProblem?) throws {
        try write { db -> Void in
            try db.execute(
                "UPDATE workers SET relay_problem = ?, relay_since = ? WHERE id = ?",
                [problem?.reason, problem?.since.milliseconds, id])
        }
    }

    public func rejoin(worker id: String, now: Date) throws {
        try write { db -> Void in
            try db.execute(
                "UPDATE workers SET heartbeat_at = \(db.dialect.clock(or: "now")), stopped_at = NULL WHERE id = :id",
                ["id": id, "now": now.milliseconds])
        }
    }

    public func deregister(worker id: String, now: Date) throws {
        try write { db -> Void in
            try db.execute("UPDATE workers SET stopped_at = ? WHERE id = ?", [now.milliseconds, id])
        }
    }

    public func liveWorkers(now: Date) throws -> [WorkerProcess] {
        try read { db in
            try db.rows(
                """
                SELECT *, \(db.dialect.clock(or: "now")) - heartbeat_at AS heartbeat_age FROM workers
                WHERE stopped_at IS NULL ORDER BY started_at
                """, ["now": now.milliseconds]
            ).map { row in
                WorkerProcess(
                    id: row["id"], host: row["host"], pid: Int32(truncatingIfNeeded: row["pid"] as Int64),
                    startedAt: Date(milliseconds: row["started_at"]), heartbeatAt: Date(milliseconds: row["heartbeat_at"]),
                    heartbeatAge: Double(row["heartbeat_age"] as Int64) / 1000,
                    relayProblem: (row["relay_problem"] as String?).map {
                        RelayProblem(reason: $0, since: Date(milliseconds: row["relay_since"] as Int64? ?? 0))
                    })
            }
        }
    }

    @discardableResult
    public func returnOrphans(ofWorker id: String, reason: String, maxAttempts: Int, now: Date) throws
        -> (interrupted: Int, returned: Int)
    {
        let at = now.milliseconds
        // READ COMMITTED on PostgreSQL: the orphaned rows are locked (FOR UPDATE) before they are returned.
        return try write(.locking) { db in
            try db.execute("UPDATE workers SET stopped_at = ? WHERE id = ? AND stopped_at IS NULL", [at, id])
            // Owners are '<id>/<connection>:<bound>': the range ['<id>/', '<id>0') holds exactly them ('0' follows '/').
            return try returnOrphans(
                db, where: Self.ownedBy, ["first": id + "/", "last": id + "0"],
                maxAttempts: maxAttempts, reason: reason, at: at)
        }
    }

    /// The condition on a worker's claim owners, `<id>/<connection>:<bound>`: bound `first` to `<id>/`, `last` to `<id>0`.
    /// Compared byte by byte (SQLite's BINARY, `COLLATE "C"` on PostgreSQL): a linguistic collation may ignore the
    /// '/' and put owners outside the range.
    static var ownedBy: String {
        "claimed_by >= :first\(dialect.bytewise) AND claimed_by < :last\(dialect.bytewise)"
    }
}

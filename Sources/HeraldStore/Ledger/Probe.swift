import Foundation
import HeraldCore

extension LedgerEngine {
    /// One row rewritten (a page written and synced, as a request's commit would), and the tables requests write
    /// touched by an update of no row, which takes the same table locks their writes take: a table locked by
    /// another session (`LOCK TABLE outbox` on PostgreSQL) keeps the probe failing as it keeps requests failing.
    public func probeWrite(now: Date) throws {
        try writeDurably { db -> Void in
            try db.execute(
                "INSERT INTO ledger_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
                [now.milliseconds])
            for table in ["outbox", "action_codes", "accounts"] {
                try db.execute("UPDATE \(table) SET \(table == "accounts" ? "uid = uid" : "id = id") WHERE 1 = 0", [])
            }
        }
    }
}

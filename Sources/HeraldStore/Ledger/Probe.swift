import Foundation
import HeraldCore

extension LedgerEngine {
    public func probeWrite(now: Date) throws {
        try writeDurably { db -> Void in
            try db.execute(
                "INSERT INTO ledger_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
                [now.milliseconds])
        }
    }
}

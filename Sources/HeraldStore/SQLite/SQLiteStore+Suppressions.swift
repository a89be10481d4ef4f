import Foundation
import GRDB
import HeraldCore

/// The suppression check of every send, on SQLite (the rest is `Ledger/Suppressions.swift`).
extension SQLiteStore {
    /// One address is asked through `QuickReads`: one statement on a read-only connection of its own, which never waits
    /// for the writer or for GRDB's reader pool.
    public var answersSuppressionsInPlace: Bool { true }

    public func suppressions(emails: [String]) throws -> [String: Suppression] {
        guard !emails.isEmpty else { return [:] }
        let now = Date().milliseconds
        if emails.count == 1, let email = emails.first {
            // Every send asks about one address, and the answer is almost always no: asked on a connection outside
            // GRDB's reader pool (`QuickReads`; the pool's bookkeeping was a ninth of `sendOobCode`'s CPU, #12), one
            // statement without a snapshot transaction around it (the probe, its parse and the transaction were a
            // sixth of the request's CPU before that). An entry is read the same way, so the check never waits for a
            // reader of the pool: `sendOobCode` asks it on the request's task (`answersSuppressionsInPlace`).
            guard let row = try LedgerPool.translating({ try quick.firstRow(Self.lookupSuppression, text: email, number: now) })
            else { return [:] }
            return [email: try Records.suppression(row)]
        }
        return try read { db in try Self.suppressions(db, emails: emails, at: now) }
    }
}

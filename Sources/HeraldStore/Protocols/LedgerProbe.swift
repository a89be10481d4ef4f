import Foundation

/// Whether the ledger takes writes: what `/health` asks while requests find it unavailable.
public protocol LedgerProbe: Sendable {
    /// Commits one small, durable write (a single row rewritten), as a request's would be.
    /// - Throws: `UNAVAILABLE` while the ledger cannot commit (busy, locked, read-only, full, unreachable).
    func probeWrite(now: Date) throws
}

import Foundation
import HeraldCore

/// Attempts with codes that do not exist: counted per hour (never a row each), and past a client network's
/// `limits.ipBadCodesPerMinute` not recorded at all; the answer stays the same, so a scanner learns nothing.
extension RedemptionService {
    /// Runs a redemption for `visitor`, counting its outcome (`herald_redemptions_total`) and charging the visitor's
    /// network when the code is bad.
    func checkingCode<T>(_ visitor: Visitor, now: Date, _ body: (Visitor) throws -> T) throws -> T {
        do {
            let value = try body(screened(visitor, now: now))
            ActionMetrics.redemption()
            return value
        } catch {
            ActionMetrics.redemption(refusedWith: error)
            if let error = error as? HeraldError, error.code == .invalidOOBCode { chargeBadCode(visitor, now: now) }
            throw error
        }
    }

    /// The visitor as the ledger sees it: past its network's limit, unknown codes go uncounted.
    func screened(_ visitor: Visitor, now: Date) -> Visitor {
        var visitor = visitor
        if let ip = visitor.ip { visitor.countsUnknownCodes = badCodeLimiter.allows(ip, now: now) }
        return visitor
    }

    func chargeBadCode(_ visitor: Visitor, now: Date) {
        if let ip = visitor.ip { _ = badCodeLimiter.take(ip, now: now) }
    }
}

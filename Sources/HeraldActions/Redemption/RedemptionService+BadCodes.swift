import Foundation
import HeraldCore
import HeraldStore

/// Attempts with codes that do not exist: counted per hour (never a row each), and past a client network's
/// `limits.ipBadCodesPerMinute` not recorded at all; the answer stays the same, so a scanner learns nothing.
extension RedemptionService {
    /// Runs a redemption for `visitor`, counting its outcome (`herald_redemptions_total`) and charging the visitor's
    /// network when the code is bad.
    func checkingCode<T>(_ code: CodeSpelling, _ visitor: Visitor, now: Date, _ body: (Visitor) throws -> T) throws -> T {
        do {
            let value = try body(screened(visitor, now: now))
            ActionMetrics.redemption()
            return value
        } catch let error as HeraldError where error.code == .invalidOOBCode {
            chargeBadCode(visitor, now: now)
            // A link whose message was pruned is not in the ledger any more: it expired, as far as anyone can tell.
            if case .link(let plaintext) = code, wasPruned(plaintext), (try? store.code(plaintext)) == nil {
                let expired = HeraldError(.expiredOOBCode, "")
                ActionMetrics.redemption(refusedWith: expired)
                throw expired
            }
            ActionMetrics.redemption(refusedWith: error)
            throw error
        } catch {
            ActionMetrics.redemption(refusedWith: error)
            throw error
        }
    }

    /// The refusal of a code the ledger does not hold: `EXPIRED_OOB_CODE` when its message was pruned
    /// (`wasPruned`), else `INVALID_OOB_CODE`.
    func unknownCodeRefusal(_ plaintext: String) -> HeraldError {
        HeraldError(wasPruned(plaintext) ? .expiredOOBCode : .invalidOOBCode, "")
    }

    /// Whether a code the ledger does not hold is one message retention deleted: it claims to be no newer than the
    /// newest code pruned (`ledger.messageRetention`). A forged code can claim that too; it learns only "expired",
    /// and is charged as an unknown code all the same.
    func wasPruned(_ plaintext: String) -> Bool {
        guard let claimed = ActionCode.claimedCreation(plaintext), let through = (try? store.prunedCodesThrough()) ?? nil else {
            return false
        }
        return claimed <= through
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

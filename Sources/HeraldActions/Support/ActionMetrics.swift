import HeraldCore
import Metrics

/// The rulebook's counters, through swift-metrics (`herald serve` exports them at `/metrics`). Labels are a
/// handful of fixed words: never an address, a code or a link.
enum ActionMetrics {
    /// `herald_redemptions_total{outcome}`: `redeemed`, or the error code the attempt was refused with
    /// (`INVALID_OOB_CODE`, `EXPIRED_OOB_CODE`, …; `error` for anything else).
    static func redemption(refusedWith error: (any Error)? = nil) {
        let outcome =
            switch error {
            case nil: "redeemed"
            case let error as HeraldError: error.code.rawValue
            default: "error"
            }
        Counter(label: "herald_redemptions_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// `herald_throttled_requests_total{limit}`: a request refused by an abuse limit (`ip`, `recipient`,
    /// `account`, `project`, `signup-ip`, `signin-ip`, `signin-account`).
    static func throttled(limit: String) {
        Counter(label: "herald_throttled_requests_total", dimensions: [("limit", limit)]).increment()
    }
}

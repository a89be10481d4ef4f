import Foundation
import HeraldStore
import Metrics

/// The worker's counters and histograms, through swift-metrics (`/metrics` of `herald serve`, and of
/// `herald worker` with `worker.metricsPort`). Made once per worker, so recording an outcome looks nothing up.
///
/// - `herald_sends_total{outcome, reply_class}`: recorded outcomes (`sent`, `deferred`, `failed`, `dead`,
///   `returned`, `possibly-delivered`) by the class of the last SMTP reply (`2xx`, `4xx`, `5xx`, `none`).
/// - `herald_send_duration_seconds{outcome}`: from the start of a send to its reply.
/// - `herald_claim_to_send_seconds`: from a row's claim to the start of its send.
struct WorkerMetrics: Sendable {
    static let outcomes = ["sent", "deferred", "failed", "dead", "returned", "possibly-delivered"]
    static let replyClasses = ["2xx", "4xx", "5xx", "none"]

    private let sends: [String: Counter]
    private let durations: [String: Metrics.Timer]
    private let claimToSend: Metrics.Timer

    init() {
        var sends: [String: Counter] = [:]
        var durations: [String: Metrics.Timer] = [:]
        for outcome in Self.outcomes {
            for replyClass in Self.replyClasses {
                sends[outcome + replyClass] = Counter(
                    label: "herald_sends_total", dimensions: [("outcome", outcome), ("reply_class", replyClass)])
            }
            durations[outcome] = Metrics.Timer(label: "herald_send_duration_seconds", dimensions: [("outcome", outcome)])
        }
        self.sends = sends
        self.durations = durations
        claimToSend = Metrics.Timer(label: "herald_claim_to_send_seconds")
    }

    /// Counts a recorded outcome.
    func count(_ outcome: Worker.Outcome, _ record: DeliveryRecord) {
        let name = Self.name(record.decision)
        sends[name + Self.replyClass(record.replyCode)]?.increment()
        durations[name]?.recordSeconds(max(0, outcome.finishedAt.timeIntervalSince(outcome.startedAt)))
        claimToSend.recordSeconds(max(0, outcome.startedAt.timeIntervalSince(outcome.claimed.claimedAt)))
    }

    static func name(_ decision: DeliveryRecord.Decision) -> String {
        switch decision {
        case .sent: "sent"
        case .deferred: "deferred"
        case .failed: "failed"
        case .dead: "dead"
        case .returned: "returned"
        case .possiblyDelivered: "possibly-delivered"
        }
    }

    /// `2xx`, `3xx`, `4xx` or `5xx` for an SMTP reply code, `none` without one (no reply, or a message never sent).
    static func replyClass(_ code: Int?) -> String {
        guard let code, (200...599).contains(code) else { return "none" }
        return "\(code / 100)xx"
    }
}

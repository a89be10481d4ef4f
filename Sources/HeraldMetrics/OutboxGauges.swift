import HeraldCore
import Prometheus
import Synchronization

/// Queue depth and campaign progress, set from the ledger's counts at each scrape.
///
/// - `herald_outbox_messages{state, action}`: rows in each state, for every state and action (zeros included,
///   so no series comes and goes).
/// - `herald_campaign_messages{campaign, state}`: rows of each campaign that still has mail pending (queued,
///   deferred or sending), for every state; a campaign drops out once nothing of it is pending.
final class OutboxGauges: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let outbox: [String: Gauge]
    /// The campaigns' gauges, by campaign id, so the ones no longer pending can be unregistered.
    private let campaigns = Mutex<[Int64: [OutboxState: Gauge]]>([:])

    static var outboxName: MetricNameDescriptor { MetricCatalogue.family("herald_outbox_messages")!.descriptor }
    static var campaignName: MetricNameDescriptor { MetricCatalogue.family("herald_campaign_messages")!.descriptor }

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        var outbox: [String: Gauge] = [:]
        for state in OutboxState.allCases {
            for kind in ActionKind.allCases {
                outbox[Self.key(state, kind)] = registry.makeGauge(
                    descriptor: Self.outboxName, labels: [("state", state.rawValue), ("action", kind.rawValue)])
            }
        }
        self.outbox = outbox
    }

    func update(_ counts: [OutboxCount]) {
        var byKey: [String: Int] = [:]
        var byCampaign: [Int64: [OutboxState: Int]] = [:]
        for count in counts {
            byKey[Self.key(count.state, count.kind), default: 0] += count.count
            if let campaign = count.campaignID { byCampaign[campaign, default: [:]][count.state, default: 0] += count.count }
        }
        for (key, gauge) in outbox { gauge.set(Int64(byKey[key] ?? 0)) }
        let pending = byCampaign.filter { $0.value.contains { $0.key.isPending && $0.value > 0 } }
        campaigns.withLock { gauges in
            for (campaign, stateGauges) in gauges where pending[campaign] == nil {
                for gauge in stateGauges.values { registry.unregisterGauge(gauge) }
                gauges[campaign] = nil
            }
            for (campaign, states) in pending {
                if gauges[campaign] == nil {
                    gauges[campaign] = Dictionary(
                        uniqueKeysWithValues: OutboxState.allCases.map { state in
                            let labels = [("campaign", String(campaign)), ("state", state.rawValue)]
                            return (state, registry.makeGauge(descriptor: Self.campaignName, labels: labels))
                        })
                }
                for (state, gauge) in gauges[campaign]! { gauge.set(Int64(states[state] ?? 0)) }
            }
        }
    }

    private static func key(_ state: OutboxState, _ kind: ActionKind) -> String { state.rawValue + "/" + kind.rawValue }
}

import HeraldCore
import Metrics
import Prometheus
import Testing

@testable import HeraldMetrics

/// The catalogue of Herald's metric families and the factory that registers them with their help text, each on a
/// registry of its own (the process's `MetricsSystem` is left alone).
@Suite struct MetricCatalogueTests {
    /// The families the code makes, by the labels it gives swift-metrics or the registry.
    static let exported = [
        "herald_sends_total", "herald_send_duration_seconds", "herald_claim_to_send_seconds", "herald_webhook_posts_total",
        "herald_outbox_messages", "herald_campaign_messages", "herald_http_requests_total",
        "herald_http_request_duration_seconds", "herald_redemptions_total", "herald_throttled_requests_total",
        "herald_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
        "process_open_fds", "process_max_fds", "process_start_time_seconds",
    ]

    @Test func everyFamilyIsCataloguedOnceWithAHelpTextAndItsUnitInItsName() {
        let names = MetricCatalogue.families.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Set(names) == Set(Self.exported))
        for family in MetricCatalogue.families {
            #expect(family.help.count > 10 && family.help.hasSuffix("."), "\(family.name)")
            #expect(!family.help.contains("\n") && !family.help.contains("\\"), "\(family.name)")
            #expect(family.name.range(of: "^[a-z][a-z0-9_]*$", options: .regularExpression) != nil, "\(family.name)")
            switch family.kind {
            case .counter: #expect(family.name.hasSuffix("_total"), "\(family.name)")
            case .histogram: #expect(family.name.hasSuffix("_seconds"), "\(family.name)")
            case .gauge:
                #expect(
                    ["_messages", "_bytes", "_fds", "_seconds", "_info"].contains { family.name.hasSuffix($0) }, "\(family.name)")
            }
        }
    }

    @Test func catalogedCountersAndTimersAreRegisteredWithTheirHelp() {
        let (factory, registry) = Self.factory()
        let sent = factory.makeCounter(label: "herald_sends_total", dimensions: [("outcome", "sent"), ("reply_class", "2xx")])
        sent.increment(by: 2)
        // The same family with other labels, and the same series again: one family, one help.
        factory.makeCounter(label: "herald_sends_total", dimensions: [("outcome", "failed"), ("reply_class", "5xx")]).increment(by: 1)
        factory.makeCounter(label: "herald_sends_total", dimensions: [("outcome", "sent"), ("reply_class", "2xx")]).increment(by: 1)
        factory.makeTimer(label: "herald_send_duration_seconds", dimensions: [("outcome", "sent")]).recordNanoseconds(3_000_000)
        factory.makeTimer(label: "herald_claim_to_send_seconds", dimensions: []).recordNanoseconds(1_000)

        let text = registry.emitToString()
        #expect(text.contains("# HELP herald_sends_total \(help("herald_sends_total"))\n# TYPE herald_sends_total counter\n"))
        #expect(text.contains(#"herald_sends_total{outcome="sent",reply_class="2xx"} 3"#))
        #expect(text.contains(#"herald_sends_total{outcome="failed",reply_class="5xx"} 1"#))
        #expect(text.components(separatedBy: "# HELP herald_sends_total").count == 2)
        #expect(text.contains("# HELP herald_send_duration_seconds \(help("herald_send_duration_seconds"))\n"))
        #expect(text.contains("# TYPE herald_send_duration_seconds histogram\n"))
        // The factory's buckets (Herald's, from half a millisecond) are kept.
        #expect(text.contains(#"herald_send_duration_seconds_bucket{outcome="sent",le="0.0005"} 0"#))
        #expect(text.contains(#"herald_send_duration_seconds_bucket{outcome="sent",le="0.005"} 1"#))
        #expect(text.contains(#"herald_send_duration_seconds_count{outcome="sent"} 1"#))
        #expect(text.contains("# HELP herald_claim_to_send_seconds \(help("herald_claim_to_send_seconds"))\n"))
    }

    @Test func everyCataloguedCounterAndHistogramGetsItsHelpThroughTheFactory() {
        let (factory, registry) = Self.factory()
        for family in MetricCatalogue.families where family.name.hasPrefix("herald_") {
            switch family.kind {
            case .counter: factory.makeCounter(label: family.name, dimensions: [("k", "v")]).increment(by: 1)
            case .histogram: factory.makeTimer(label: family.name, dimensions: [("k", "v")]).recordNanoseconds(1)
            case .gauge: factory.makeMeter(label: family.name, dimensions: [("k", "v")]).set(Int64(1))
            }
        }
        let text = registry.emitToString()
        for family in MetricCatalogue.families where family.name.hasPrefix("herald_") {
            #expect(text.contains("# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"), "\(family.name)")
        }
    }

    @Test func otherMetricsAreLeftToPrometheusFactoryAndCanBeDestroyed() {
        let (factory, registry) = Self.factory()
        let other = factory.makeCounter(label: "library_things_total", dimensions: [])
        other.increment(by: 1)
        // A catalogued name made as another type is not given the catalogue's help either.
        factory.makeRecorder(label: "library_sizes", dimensions: [], aggregate: true).record(Int64(5))
        let timer = factory.makeTimer(label: "herald_http_request_duration_seconds", dimensions: [("route", "/x")])
        var text = registry.emitToString()
        #expect(text.contains("# TYPE library_things_total counter\nlibrary_things_total 1\n"))
        #expect(!text.contains("# HELP library_things_total"))
        #expect(text.contains("# TYPE library_sizes histogram"))
        factory.destroyCounter(other)
        factory.destroyTimer(timer)
        text = registry.emitToString()
        #expect(!text.contains("library_things_total"))
        #expect(!text.contains("herald_http_request_duration_seconds"))
    }

    @Test func buildInfoNamesTheRelease() {
        let registry = PrometheusCollectorRegistry()
        MetricCatalogue.registerBuildInfo(in: registry)
        let text = registry.emitToString()
        #expect(text.contains("# HELP herald_build_info \(help("herald_build_info"))\n# TYPE herald_build_info gauge\n"))
        #expect(text.contains("herald_build_info{version=\"\(HeraldVersion.current)\"} 1"))
        // The process's registry has it from the start.
        #expect(HeraldMetrics.registry.emitToString().contains("herald_build_info{version=\"\(HeraldVersion.current)\"} 1"))
    }

    static func factory() -> (HeraldMetricsFactory, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.defaultDurationHistogramBuckets = HeraldMetrics.durationBuckets
        return (HeraldMetricsFactory(prometheus), registry)
    }

    func help(_ name: String) -> String { MetricCatalogue.family(name)!.help }
}

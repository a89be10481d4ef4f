import Metrics
import Prometheus

/// The process's metrics: one Prometheus registry behind swift-metrics, which `/metrics` serves, with
/// `herald_build_info` and the process's own figures (`ProcessMetrics`, read from `/proc` at each scrape).
///
/// Call `bootstrap()` before anything makes a counter (the worker makes its own when created); it installs the
/// factory once per process, however often it is called, since `MetricsSystem.bootstrap` may run only once.
/// Every family has its `# HELP` text from `MetricCatalogue`.
///
/// ```swift
/// HeraldMetrics.bootstrap()
/// let text = String(decoding: HeraldMetrics.exposition(), as: UTF8.self)
/// ```
public enum HeraldMetrics {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricCatalogue.registerBuildInfo(in: registry)
        return registry
    }()
    /// The outbox gauges, refreshed from the ledger at each scrape.
    static let outbox = OutboxGauges(registry: registry)

    private static let installed: Void = MetricsSystem.bootstrap(factory)

    public static func bootstrap() { _ = installed }

    /// Histogram buckets for every duration, from half a millisecond (a send on loopback) to five minutes
    /// (a claimed row waiting behind a campaign's rate).
    static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
        .seconds(10), .seconds(30), .seconds(60), .seconds(300),
    ]

    static var factory: HeraldMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = durationBuckets
        return HeraldMetricsFactory(factory)
    }

    /// What `/metrics` answers: the registry's families, then the process's figures read now.
    public static func exposition() -> [UInt8] {
        var bytes = registry.emitToBuffer()
        bytes.append(contentsOf: ProcessMetrics.read().exposition().utf8)
        return bytes
    }
}

import Metrics
import Prometheus

/// swift-metrics' factory for the process: `PrometheusMetricsFactory`, except that a family named in
/// `MetricCatalogue` is registered through the registry's own `make…(descriptor:)` with its help text.
/// swift-prometheus's factory registers every family with an empty help (so no `# HELP` line), and its registry
/// stops the process when one name is registered with two help texts: every Herald family goes through here, so
/// each always gets the catalogue's. Anything else (a library's metric) is handed to the wrapped factory as it was.
///
/// ```swift
/// MetricsSystem.bootstrap(HeraldMetricsFactory(PrometheusMetricsFactory(registry: registry)))
/// Counter(label: "herald_sends_total", dimensions: [("outcome", "sent")]).increment()  // with its # HELP
/// ```
public struct HeraldMetricsFactory: MetricsFactory {
    public let prometheus: PrometheusMetricsFactory

    public init(_ prometheus: PrometheusMetricsFactory) { self.prometheus = prometheus }

    var registry: PrometheusCollectorRegistry { prometheus.registry }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let descriptor = MetricCatalogue.descriptor(label, .counter) else {
            return prometheus.makeCounter(label: label, dimensions: dimensions)
        }
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        guard let descriptor = MetricCatalogue.descriptor(label, .counter) else {
            return prometheus.makeFloatingPointCounter(label: label, dimensions: dimensions)
        }
        return registry.makeCounter(descriptor: descriptor, labels: dimensions)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        guard let descriptor = MetricCatalogue.descriptor(label, .gauge) else {
            return prometheus.makeMeter(label: label, dimensions: dimensions)
        }
        return registry.makeGauge(descriptor: descriptor, labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard let descriptor = MetricCatalogue.descriptor(label, aggregate ? .histogram : .gauge) else {
            return prometheus.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        guard aggregate else { return registry.makeGauge(descriptor: descriptor, labels: dimensions) }
        let buckets = prometheus.valueHistogramBuckets[label] ?? prometheus.defaultValueHistogramBuckets
        return registry.makeValueHistogram(descriptor: descriptor, labels: dimensions, buckets: buckets)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let descriptor = MetricCatalogue.descriptor(label, .histogram) else {
            return prometheus.makeTimer(label: label, dimensions: dimensions)
        }
        let buckets = prometheus.durationHistogramBuckets[label] ?? prometheus.defaultDurationHistogramBuckets
        return registry.makeDurationHistogram(descriptor: descriptor, labels: dimensions, buckets: buckets)
    }

    // Whichever way a metric was made, it lives in the one registry: the wrapped factory unregisters it.
    public func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { prometheus.destroyFloatingPointCounter(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}

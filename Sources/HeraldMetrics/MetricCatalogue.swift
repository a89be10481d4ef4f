import HeraldCore
import Prometheus

/// Every metric family Herald exports at `/metrics`, with its type and its `# HELP` text: the one place a family's
/// help is written. The code that counts keeps using swift-metrics (`Counter(label: "herald_sends_total")`);
/// `HeraldMetricsFactory` registers a family named here with its help. Units are in the names (`_seconds`,
/// `_total`, `_messages`, `_bytes`), and the names are the ones dashboards already use: never rename one.
///
/// ```swift
/// MetricCatalogue.family("herald_sends_total")?.help  // "SMTP sends by the outcome recorded and the class of the last reply."
/// ```
public enum MetricCatalogue {
    public struct Family: Sendable, Hashable {
        public enum Kind: String, Sendable {
            case counter, gauge, histogram
        }

        public let name: String
        public let kind: Kind
        public let help: String

        init(_ name: String, _ kind: Kind, _ help: String) {
            self.name = name
            self.kind = kind
            self.help = help
        }

        /// The registry's name for this family, with its help text.
        var descriptor: MetricNameDescriptor { MetricNameDescriptor(metricName: name, unitName: "", helpText: help) }
    }

    public static let families: [Family] = [
        // The worker (`herald serve`'s embedded one, or `herald worker`).
        Family("herald_sends_total", .counter, "SMTP sends by the outcome recorded and the class of the last reply."),
        Family("herald_send_duration_seconds", .histogram, "Time from the start of an SMTP transaction to its reply, by outcome."),
        Family("herald_claim_to_send_seconds", .histogram, "Time from a message's claim by a worker to the start of its send."),
        Family("herald_webhook_posts_total", .counter, "Webhook POSTs by endpoint and by how they ended."),
        // The ledger's counts, read at a scrape.
        Family("herald_outbox_messages", .gauge, "Outbox rows by state and action."),
        Family("herald_campaign_messages", .gauge, "Rows of each campaign with mail pending, by state."),
        // The HTTP API (`herald serve`).
        Family("herald_http_requests_total", .counter, "HTTP requests by route pattern, method and status."),
        Family(
            "herald_http_request_duration_seconds", .histogram,
            "Time from a routed HTTP request to its handler's response, by route pattern, method and status."),
        Family("herald_redemptions_total", .counter, "Action code redemptions by outcome: redeemed, or the error refusing them."),
        Family("herald_throttled_requests_total", .counter, "Requests refused by an abuse limit, by limit."),
        // The process.
        Family("herald_build_info", .gauge, "Always 1, labelled with the Herald release this process runs."),
        Family("process_cpu_seconds_total", .counter, "Total user and system CPU time spent in seconds."),
        Family("process_resident_memory_bytes", .gauge, "Resident memory size in bytes."),
        Family("process_virtual_memory_bytes", .gauge, "Virtual memory size in bytes."),
        Family("process_open_fds", .gauge, "Number of open file descriptors."),
        Family("process_max_fds", .gauge, "Maximum number of open file descriptors."),
        Family("process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds."),
    ]

    private static let byName = Dictionary(uniqueKeysWithValues: families.map { ($0.name, $0) })

    /// The family called `name`, if Herald exports one.
    public static func family(_ name: String) -> Family? { byName[name] }

    /// The descriptor of `name` when it is catalogued as a `kind`; nil otherwise (an unknown name, or a name made as
    /// another type, is registered without help, and the scrape tests then fail on its missing `# HELP`).
    static func descriptor(_ name: String, _ kind: Family.Kind) -> MetricNameDescriptor? {
        guard let family = byName[name], family.kind == kind else { return nil }
        return family.descriptor
    }

    /// `herald_build_info{version="0.3.0"} 1`, registered in `registry`.
    static func registerBuildInfo(in registry: PrometheusCollectorRegistry, version: String = HeraldVersion.current) {
        registry.makeGauge(descriptor: family("herald_build_info")!.descriptor, labels: [("version", version)]).set(to: 1)
    }
}

import Foundation

/// The process's own figures as Prometheus's client libraries export them (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, …), read from `/proc` at each scrape: nothing is sampled in between. A figure
/// that cannot be read (no `/proc`, as on macOS) is left out of the scrape rather than written as 0.
///
/// ```swift
/// let text = ProcessMetrics.read().exposition()  // "# HELP process_cpu_seconds_total …\n…"
/// ```
struct ProcessMetrics: Equatable {
    var cpuSeconds: Double?
    var residentBytes: Double?
    var virtualBytes: Double?
    var openFDs: Int?
    var maxFDs: Int?
    var startTime: Double?

    /// This process's figures now.
    static func read(proc: String = "/proc") -> ProcessMetrics {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        var metrics = ProcessMetrics()
        if let stat = try? String(contentsOfFile: proc + "/self/stat", encoding: .utf8) {
            let boot = (try? String(contentsOfFile: proc + "/stat", encoding: .utf8)).flatMap(bootTime)
            metrics.apply(stat: stat, bootTime: boot, ticksPerSecond: ticks, pageSize: pageSize)
        }
        metrics.openFDs = (try? FileManager.default.contentsOfDirectory(atPath: proc + "/self/fd"))?.count
        metrics.maxFDs = (try? String(contentsOfFile: proc + "/self/limits", encoding: .utf8)).flatMap(openFileLimit)
        return metrics
    }

    /// The figures of `/proc/self/stat` (see proc(5)): CPU time (utime + stime), virtual size, resident pages, and
    /// the start in clock ticks after boot.
    mutating func apply(stat: String, bootTime: Double?, ticksPerSecond: Double, pageSize: Double) {
        // The command name, in parentheses, may hold spaces: the fields are counted after its closing one.
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3 of proc(5)); field N is fields[N - 3].
        func field(_ number: Int) -> Double? { fields.indices.contains(number - 3) ? Double(fields[number - 3]) : nil }
        if let user = field(14), let system = field(15) { cpuSeconds = (user + system) / ticksPerSecond }
        if let start = field(22), let bootTime { startTime = bootTime + start / ticksPerSecond }
        virtualBytes = field(23)
        residentBytes = field(24).map { $0 * pageSize }
    }

    /// `btime` of `/proc/stat`: when the system booted, in seconds since the epoch.
    static func bootTime(_ stat: String) -> Double? {
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// The soft limit of `Max open files` in `/proc/self/limits` (nil when unlimited).
    static func openFileLimit(_ limits: String) -> Int? {
        for line in limits.split(separator: "\n") where line.hasPrefix("Max open files") {
            return line.dropFirst("Max open files".count).split(separator: " ").first.flatMap { Int($0) }
        }
        return nil
    }

    /// The figures in Prometheus's text format, each with its `# HELP` and `# TYPE` from `MetricCatalogue`.
    func exposition() -> String {
        let figures: [(String, Double?)] = [
            ("process_cpu_seconds_total", cpuSeconds), ("process_resident_memory_bytes", residentBytes),
            ("process_virtual_memory_bytes", virtualBytes), ("process_open_fds", openFDs.map(Double.init)),
            ("process_max_fds", maxFDs.map(Double.init)), ("process_start_time_seconds", startTime),
        ]
        var text = ""
        for case let (name, value?) in figures {
            guard let family = MetricCatalogue.family(name) else { continue }
            text += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n\(name) \(Self.format(value))\n"
        }
        return text
    }

    /// A whole number without a fraction (`12288`), any other as Swift writes it (`0.37`), both of which Prometheus reads.
    static func format(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

import Foundation
import Testing

@testable import HeraldMetrics

/// The `process_*` figures: proc(5)'s files parsed, this process read, and their text with help and type.
@Suite struct ProcessMetricsTests {
    /// A `/proc/self/stat` line whose command name holds a space and a parenthesis, as a thread name may.
    static let stat =
        "4242 (herald (w 1)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 9 0 360000 1073741824 2560 "
        + "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"

    @Test func statGivesCPUTimeMemoryAndTheStart() {
        var metrics = ProcessMetrics()
        metrics.apply(stat: Self.stat, bootTime: 1_700_000_000, ticksPerSecond: 100, pageSize: 4096)
        #expect(metrics.cpuSeconds == 3.8)  // (250 + 130) ticks
        #expect(metrics.startTime == 1_700_003_600)  // 360000 ticks after boot
        #expect(metrics.virtualBytes == 1_073_741_824)
        #expect(metrics.residentBytes == 10_485_760)  // 2560 pages of 4096 bytes
    }

    @Test func bootTimeAndTheOpenFileLimitAreRead() {
        #expect(ProcessMetrics.bootTime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n") == 1_700_000_000)
        #expect(ProcessMetrics.bootTime("cpu  1 2 3\n") == nil)
        let limits = """
            Limit                     Soft Limit           Hard Limit           Units
            Max processes             95000                95000                processes
            Max open files            1024                 524288               files
            """
        #expect(ProcessMetrics.openFileLimit(limits) == 1024)
        #expect(ProcessMetrics.openFileLimit("Max open files            unlimited            unlimited            files") == nil)
    }

    @Test func thisProcessIsRead() throws {
        try #require(FileManager.default.fileExists(atPath: "/proc/self/stat"), "Linux only")
        let metrics = ProcessMetrics.read()
        let cpu = try #require(metrics.cpuSeconds)
        #expect(cpu >= 0)
        #expect(try #require(metrics.residentBytes) > 1_000_000)
        #expect(try #require(metrics.virtualBytes) >= metrics.residentBytes!)
        let open = try #require(metrics.openFDs)
        #expect(open >= 3)
        #expect(try #require(metrics.maxFDs) >= open)
        let start = try #require(metrics.startTime)
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 1 && start > now - 24 * 3600, "started \(now - start) s ago")
    }

    @Test func everyFigureIsWrittenWithItsHelpAndType() {
        let metrics = ProcessMetrics(
            cpuSeconds: 0.37, residentBytes: 12_288, virtualBytes: 1_073_741_824, openFDs: 12, maxFDs: 1024, startTime: 1_700_000_000.5)
        let text = metrics.exposition()
        #expect(
            text.hasPrefix(
                "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                    + "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 0.37\n"))
        for line in [
            "process_resident_memory_bytes 12288", "process_virtual_memory_bytes 1073741824", "process_open_fds 12",
            "process_max_fds 1024", "process_start_time_seconds 1700000000.5",
        ] {
            #expect(text.contains("\n\(line)\n"), "\(line)")
        }
        for name in ["process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"] {
            #expect(text.contains("# HELP \(name) \(MetricCatalogue.family(name)!.help)\n# TYPE \(name) gauge\n"), "\(name)")
        }
        // A figure that could not be read is left out, not written as 0.
        #expect(ProcessMetrics(cpuSeconds: 1).exposition().components(separatedBy: "\n").count == 4)
        #expect(ProcessMetrics().exposition().isEmpty)
    }
}

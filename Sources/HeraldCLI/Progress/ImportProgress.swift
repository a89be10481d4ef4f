import Foundation
import Logging

/// Progress of a long import or export: a line rewritten in place on a terminal (rows, rate, ETA), otherwise an
/// info log line every 10 seconds, `progress: 1200/5000 users, 400/s, ETA 10s`, with `done`, `total`, `rate` and
/// `eta` (seconds) as fields in JSON logs.
final class ImportProgress {
    let noun: String
    let logger: Logger
    let started = Date()
    let terminal = isatty(STDERR_FILENO) == 1
    private var lastLine = Date.distantPast
    private var drew = false

    init(noun: String, logger: Logger) {
        self.noun = noun
        self.logger = logger
    }

    var elapsed: Double { Date().timeIntervalSince(started) }

    func update(_ done: Int, of total: Int?) {
        let now = Date()
        guard now.timeIntervalSince(lastLine) >= (terminal ? 0.2 : 10) else { return }
        lastLine = now
        let rate = Double(done) / max(0.001, elapsed)
        let eta = total.flatMap { rate > 0 ? Double($0 - done) / rate : nil }
        var line = "\(done)" + (total.map { "/\($0)" } ?? "") + " \(noun), " + String(format: "%.0f/s", rate)
        if let eta { line += ", ETA " + String(format: "%.0fs", eta) }
        if terminal {
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
            drew = true
        } else {
            var metadata: Logger.Metadata = ["done": "\(done)", "rate": "\(String(format: "%.0f", rate))"]
            if let total { metadata["total"] = "\(total)" }
            if let eta { metadata["eta"] = "\(String(format: "%.0f", eta))" }
            logger.info("progress: \(line)", metadata: metadata)
        }
    }

    func finish() {
        if drew { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}

import Foundation

/// Progress of a long import or export: a line rewritten in place on a terminal (rows, rate, ETA), a line every
/// 10 seconds otherwise.
final class ImportProgress {
    let noun: String
    let started = Date()
    let terminal = isatty(STDERR_FILENO) == 1
    private var lastLine = Date.distantPast
    private var drew = false

    init(noun: String) { self.noun = noun }

    var elapsed: Double { Date().timeIntervalSince(started) }

    func update(_ done: Int, of total: Int?) {
        let now = Date()
        guard now.timeIntervalSince(lastLine) >= (terminal ? 0.2 : 10) else { return }
        lastLine = now
        let rate = Double(done) / max(0.001, elapsed)
        var line = "\(done)" + (total.map { "/\($0)" } ?? "") + " \(noun), " + String(format: "%.0f/s", rate)
        if let total, rate > 0 { line += ", ETA " + String(format: "%.0fs", Double(total - done) / rate) }
        if terminal {
            FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
            drew = true
        } else {
            FileHandle.standardError.write(Data("\(line)\n".utf8))
        }
    }

    func finish() {
        if drew { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}

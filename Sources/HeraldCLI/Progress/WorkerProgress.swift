import Foundation
import HeraldActions
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

/// `herald worker`'s progress, read from the ledger: sent, deferred and failed since the worker started, the send
/// rate over the last ten seconds, what is pending and, at that rate, when it will be done. On a terminal it is one
/// line on standard error rewritten twice a second; otherwise a log line every `interval` (10 s).
///
/// It counts the ledger, so mail other workers send from the same ledger counts too.
struct WorkerProgress: Service {
    let store: any OutboxStore
    let logger: Logger
    var terminal = isatty(STDERR_FILENO) == 1
    var interval: TimeInterval = 10

    /// What a reading of the ledger says, against the reading at start.
    struct Reading {
        let sent: Int
        let deferred: Int
        let failed: Int
        let pending: Int

        init(_ counts: [OutboxState: Int], since start: [OutboxState: Int]) {
            let grown = { (state: OutboxState) in max(0, (counts[state] ?? 0) - (start[state] ?? 0)) }
            sent = grown(.sent) + grown(.possiblyDelivered)
            failed = grown(.failed) + grown(.dead)
            deferred = counts[.deferred] ?? 0
            pending = (counts[.queued] ?? 0) + (counts[.deferred] ?? 0) + (counts[.sending] ?? 0)
        }
    }

    func run() async throws {
        let start = (try? await offload { try store.stateCounts() }) ?? [:]
        let started = Date()
        var samples: [(at: Date, sent: Int)] = []
        var drew = false
        defer { if drew { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) } }
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(terminal ? 0.5 : interval)) }
            guard !Task.isShuttingDownGracefully, !Task.isCancelled,
                let counts = try? await offload({ try store.stateCounts() })
            else { continue }
            let reading = Reading(counts, since: start)
            let now = Date()
            samples.append((now, reading.sent))
            samples.removeAll { now.timeIntervalSince($0.at) > 10 }
            let window = samples.first.map { now.timeIntervalSince($0.at) } ?? 0
            let rate = window > 0 ? Double(reading.sent - (samples.first?.sent ?? 0)) / window : 0
            let line = Self.line(reading, rate: rate, elapsed: now.timeIntervalSince(started))
            if terminal {
                FileHandle.standardError.write(Data("\r\u{1B}[2K\(line)".utf8))
                drew = true
            } else {
                logger.info(
                    "progress: \(line)",
                    metadata: [
                        "sent": "\(reading.sent)", "deferred": "\(reading.deferred)", "failed": "\(reading.failed)",
                        "pending": "\(reading.pending)", "rate": "\(String(format: "%.1f", rate))",
                    ])
            }
        }
    }

    /// `sent 1200, deferred 3, failed 1; 250.0 msg/s; 8800 pending, ETA 35s` (ETA `-` while nothing moves).
    static func line(_ reading: Reading, rate: Double, elapsed: TimeInterval) -> String {
        let eta = rate > 0 ? DurationText.format((Double(reading.pending) / rate).rounded()) : "-"
        return "sent \(reading.sent), deferred \(reading.deferred), failed \(reading.failed); "
            + String(format: "%.1f msg/s", rate) + "; \(reading.pending) pending, ETA \(eta)"
    }
}

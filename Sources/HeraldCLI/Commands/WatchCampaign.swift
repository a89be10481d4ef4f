import ArgumentParser
import Foundation
import HeraldActions

/// `herald campaigns watch`: a live progress bar on a terminal, plain periodic lines otherwise.
struct WatchCampaign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Follow a campaign's progress until nothing is left to send.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    @Option(help: "Seconds between updates.") var interval: Double = 1

    func run() async throws {
        try await reportingErrors {
            let actions = try await Runtime.load(global).actions()
            let campaigns = actions.campaigns
            _ = try campaigns.campaign(id: id)
            let terminal = isatty(STDOUT_FILENO) == 1
            var samples: [(Date, Int)] = []
            while true {
                let progress = try campaigns.campaign(id: id)
                let total = progress.total
                let sent = progress.sent
                let finished = total - progress.pending
                samples.append((Date(), sent))
                samples = samples.filter { Date().timeIntervalSince($0.0) <= 10 }
                let rate = samples.count > 1 ? Double(sent - samples[0].1) / max(0.001, Date().timeIntervalSince(samples[0].0)) : 0
                let remaining = total - finished
                let eta = rate > 0 ? String(format: "%.0fs", Double(remaining) / rate) : "-"
                let percent = total == 0 ? 100 : Int(Double(finished) * 100 / Double(total))
                var summary =
                    "sent \(sent)/\(total) (\(percent)%), deferred \(progress.deferred), failed \(progress.failed), "
                    + String(format: "%.1f msg/s", rate) + ", ETA \(eta)"
                if progress.status == .scheduled { summary += "; starts \(progress.campaign.startAt.iso8601)" }
                if progress.status == .paused { summary += "; paused" }
                // Why nothing moves, when something keeps it from moving.
                if remaining > 0, let status = try? actions.console.workerStatus(),
                    let obstacle = LiveWorker.obstacle(status.workers, pending: status.queue.pending)
                {
                    summary += "; \(obstacle)"
                }
                if terminal {
                    let width = 30
                    let filled = total == 0 ? width : width * finished / total
                    let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
                    FileHandle.standardOutput.write(Data("\r\u{1B}[2Kcampaign \(id) [\(bar)] \(summary)".utf8))
                } else {
                    // Written at once, not buffered: whoever reads the pipe (`| tee`, a log) sees each line as it comes.
                    FileHandle.standardOutput.write(Data("campaign \(id): \(summary)\n".utf8))
                }
                if remaining == 0 || progress.status == .cancelled {
                    if terminal { print("") }
                    print("campaign \(id) \(progress.status == .cancelled ? "cancelled" : "done"): \(summary)")
                    return
                }
                try await Task.sleep(for: .seconds(max(0.1, interval)))
            }
        }
    }
}

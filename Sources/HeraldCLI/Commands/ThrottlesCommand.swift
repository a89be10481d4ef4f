import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald throttles`: what the abuse limits refused, and the unknown-code visits, per hour.
struct ThrottlesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "throttles",
        abstract: "Requests the abuse limits refused (per client network, account, recipient, project) and unknown-code visits, per hour.",
        discussion: """
            Counters: ip (key: the client's IPv4 /24 or IPv6 /48), account (uid, or address:<hash>), recipient (address hash), \
            project (QUOTA_EXCEEDED), unknown-code (visits and attempts with codes that do not exist, by network). \
            Counts reach the ledger within about a second of the refusal.
            """)

    @OptionGroup var global: GlobalOptions
    @Option(help: "How many hours back to show.") var hours = 24

    func run() async throws {
        try await reportingErrors {
            guard hours > 0 else { throw HeraldError(.argumentError, "--hours: expected a positive number of hours") }
            let reports = try await Runtime.load(global).actions().reports
            let counts = try reports.abuseCounts(since: Date().addingTimeInterval(-Double(hours) * 3600))
            var lines = ["hour                  counter       count  key"]
            for count in counts {
                let counter = count.counter.padding(toLength: 12, withPad: " ", startingAt: 0)
                let number = String(count.count)
                lines.append("\(count.hour.iso8601)  \(counter)  \(String(repeating: " ", count: max(0, 5 - number.count)))\(number)  \(count.key)")
            }
            if counts.isEmpty { lines.append("(nothing refused)") }
            print(lines.joined(separator: "\n"))
        }
    }
}

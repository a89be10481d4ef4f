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
    @Option(help: "At most this many rows (the newest hours first, the largest counts first within an hour).") var limit = 1000
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("HOUR", key: "hour"), .init("COUNTER", key: "counter"), .init("COUNT", key: "count"), .init("KEY", key: "key"),
    ]

    /// One row of `--format json|jsonl`.
    struct Row: Encodable {
        let hour: String
        let counter: String
        let count: Int
        let key: String
    }

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            guard hours > 0 else { throw HeraldError(.argumentError, "--hours: expected a positive number of hours") }
            let reports = try await Runtime.load(global).actions().reports
            guard limit > 0 else { throw HeraldError(.argumentError, "--limit: expected a positive number of rows") }
            // One more than shown, to say when rows were left out.
            let counts = try reports.abuseCounts(since: Date().addingTimeInterval(-Double(hours) * 3600), limit: limit + 1)
            let writer = RowWriter(format: format, columns: Self.columns)
            for count in counts.prefix(limit) {
                let row = Row(hour: count.hour.iso8601, counter: count.counter, count: count.count, key: count.key)
                try writer.write([row.hour, row.counter, "\(row.count)", row.key], json: row)
            }
            writer.finish(empty: "(nothing refused)")
            if counts.count > limit {
                FileHandle.standardError.write(Data("herald: showing the first \(limit) rows; --limit shows more\n".utf8))
            }
        }
    }
}

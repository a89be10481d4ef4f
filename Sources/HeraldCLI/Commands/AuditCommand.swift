import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore

/// `herald audit`: one row per link, streamed.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Which links went to whom, what the SMTP server said, and which were clicked, redeemed, expired or superseded.")

    @OptionGroup var global: GlobalOptions
    @Option var email: String?
    @Option var campaign: Int64?
    @Option var action: String?
    @Option(help: "Queued at or after (ISO 8601, now, +10m).") var since: String?
    @Option(help: "Queued at or before (ISO 8601).") var until: String?
    @Flag var redeemed = false
    @Flag var unredeemed = false
    @Flag var expired = false
    @Option(help: "table | csv | jsonl") var format = "table"
    @Flag(help: "Identity-provider sign-ins, links, take-overs and needConfirmation answers instead of links.") var signIns = false

    func run() async throws {
        try await reportingErrors {
            guard let output = AuditFormatter.Format(rawValue: format) else {
                throw HeraldError(.argumentError, "--format: expected table, csv or jsonl")
            }
            guard [redeemed, unredeemed, expired].filter({ $0 }).count <= 1 else {
                throw HeraldError(.argumentError, "use at most one of --redeemed, --unredeemed, --expired")
            }
            var filter = AuditFilter()
            filter.email = try email.map { try EmailAddress($0) }
            filter.campaign = campaign
            filter.kind = try action.map { try ActionKind(argument: $0) }
            filter.since = try since.map(CreateCampaign.parseTime)
            filter.until = try until.map(CreateCampaign.parseTime)
            filter.status = redeemed ? .redeemed : unredeemed ? .unredeemed : expired ? .expired : nil
            let reports = try await Runtime.load(global).actions().reports
            var buffer = Data()
            defer { FileHandle.standardOutput.write(buffer) }
            func emit(_ line: String) {
                buffer.append(contentsOf: line.utf8)
                buffer.append(10)
                if buffer.count > 1 << 16 {
                    FileHandle.standardOutput.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            if signIns {
                if let header = AuditFormatter.eventHeader(output) { emit(header) }
                try reports.accountEvents(email: filter.email?.value, since: filter.since, until: filter.until) { event in
                    emit(AuditFormatter.line(event, output))
                }
                return
            }
            if let header = AuditFormatter.header(output) { emit(header) }
            try reports.audit(filter) { row in emit(AuditFormatter.line(row, output)) }
        }
    }
}

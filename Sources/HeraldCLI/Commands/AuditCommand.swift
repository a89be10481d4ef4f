import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldStore

/// `herald audit`: one row per link, streamed.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Which links went to whom, what the SMTP server said, and which were clicked, redeemed, expired or superseded.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "Only links sent to this address or about its account.") var email: String?
    @Option(help: "Only links of this campaign (its id).") var campaign: Int64?
    @Option(help: "Only links of this action: \(ActionKind.allCases.map(\.rawValue).joined(separator: ", ")).") var action: String?
    @Option(help: "Queued at or after this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var since: String?
    @Option(help: "Queued at or before this time: ISO 8601, now, or how long ago (90s, 10m, 1h, 2d).") var until: String?
    @Flag(help: "Only links that were redeemed.") var redeemed = false
    @Flag(help: "Only links that were sent and not redeemed.") var unredeemed = false
    @Flag(help: "Only links that expired unredeemed.") var expired = false
    @OptionGroup var output: OutputOptions
    @Flag(help: "Identity-provider sign-ins, links, take-overs and needConfirmation answers instead of links.") var signIns = false
    @Option(
        help: ArgumentHelp(
            "Read the message archive (ledger.archive) instead of the ledger: a directory of archive files, or one file.",
            valueName: "path")) var archive: String?

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            // JSON is the JSON lines, as one array.
            let lines = AuditFormatter.Format(rawValue: format.rawValue) ?? .jsonl
            guard [redeemed, unredeemed, expired].filter({ $0 }).count <= 1 else {
                throw HeraldError(.argumentError, "use at most one of --redeemed, --unredeemed, --expired")
            }
            var filter = AuditFilter()
            filter.email = try email.map { try EmailAddress($0) }
            filter.campaign = campaign
            filter.kind = try action.map { try ActionKind(argument: $0) }
            filter.since = try since.map { try TimeArgument.past($0, option: "--since") }
            filter.until = try until.map { try TimeArgument.past($0, option: "--until") }
            filter.status = redeemed ? .redeemed : unredeemed ? .unredeemed : expired ? .expired : nil
            if archive != nil && signIns {
                throw HeraldError(.argumentError, "--sign-ins reads the ledger; the message archive holds links only")
            }
            // The archive needs no ledger: it may be read on another machine.
            let reports = archive == nil ? try await Runtime.load(global).actions().reports : nil
            var buffer = Data()
            var count = 0
            defer {
                if format == .json { buffer.append(contentsOf: (count == 0 ? "[]\n" : "\n]\n").utf8) }
                FileHandle.standardOutput.write(buffer)
            }
            func emit(_ line: String) {
                if format == .json { buffer.append(contentsOf: (count == 0 ? "[\n  " : ",\n  ").utf8) }
                count += 1
                buffer.append(contentsOf: line.utf8)
                if format != .json { buffer.append(10) }
                if buffer.count > 1 << 16 {
                    FileHandle.standardOutput.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            if let archive {
                if let header = AuditFormatter.header(lines) { emit(header) }
                for file in try LedgerArchive.files(at: archive) {
                    try LedgerArchive.read(file, warn: { FileHandle.standardError.write(Data("herald: \($0)\n".utf8)) }) { row in
                        if filter.matches(row) { emit(AuditFormatter.line(row, lines)) }
                    }
                }
                return
            }
            guard let reports else { return }
            if signIns {
                if let header = AuditFormatter.eventHeader(lines) { emit(header) }
                try reports.accountEvents(email: filter.email?.value, since: filter.since, until: filter.until) { event in
                    emit(AuditFormatter.line(event, lines))
                }
                return
            }
            if let header = AuditFormatter.header(lines) { emit(header) }
            try reports.audit(filter) { row in emit(AuditFormatter.line(row, lines)) }
        }
    }
}

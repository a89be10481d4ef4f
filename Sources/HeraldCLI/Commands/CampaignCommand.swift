import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldMail

/// `herald campaigns …` (or `herald campaign …`): bulk sends with rates, control, progress and reports.
struct CampaignCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "campaigns", abstract: "Bulk campaigns: create, preview, list, pause, resume, cancel, watch, report.",
        discussion: "`herald campaign` (singular, the earlier name) is kept as an alias.",
        subcommands: [
            CreateCampaign.self, PreviewCampaign.self, ListCampaigns.self, PauseCampaign.self, ResumeCampaign.self, CancelCampaign.self,
            WatchCampaign.self, ReportCampaign.self,
        ],
        aliases: ["campaign"])
}

/// `herald campaign create`.
struct CreateCampaign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create (or resume importing) a campaign from a CSV of recipients or from accounts.",
        discussion: """
            CSV: a header row with 'email' and optional 'display_name', 'locale'; other columns become template variables. \\
            Bad rows go to the rejects file (line, reason, content). Re-running for the same NAME skips rows already imported.
            """)

    @OptionGroup var global: GlobalOptions
    @Argument(help: "Campaign name (unique).") var name: String
    @Option(help: "The action of every link: verify-email, reset-password or sign-in.") var action: String
    @Option(help: "CSV file of recipients.") var recipients: String?
    @Flag(help: "Take recipients from the account store.") var fromAccounts = false
    @Flag(help: "With --from-accounts: only accounts whose email is not verified.") var unverified = false
    @Option(help: "Continue URL for the links (its host must be authorized).") var continueUrl: String?
    @Option(help: "Send rate such as 50/s, 600/m or 10000/h (default: as fast as the worker goes).") var rate: String?
    @Option(help: "When to start: ISO 8601 (2026-11-22T10:00:00Z), now, or +10m.") var startAt: String?
    @Option(help: "Link lifetime for this campaign, e.g. 7d (default: links.lifetime).") var linkLifetime: String?
    @Option(help: "Where rejected rows go (default: <recipients>.rejects.csv).") var rejects: String?
    @Option(
        help: ArgumentHelp(
            "The campaign's own templates: DIR/<locale>/subject.mustache, body.html.mustache, body.txt.mustache (default: the global ones).",
            discussion: "They are checked, then kept in the ledger: every worker renders the campaign's mail with them."))
    var templates: String?

    func run() async throws {
        try await reportingErrors {
            let kind = try ActionKind(argument: action)
            guard (recipients != nil) != fromAccounts else { throw HeraldError(.argumentError, "give either --recipients FILE or --from-accounts") }
            if unverified && !fromAccounts { throw HeraldError(.argumentError, "--unverified goes with --from-accounts") }
            let request = CampaignRequest(
                name: name, kind: kind, source: recipients.map { .csv(path: $0) } ?? .accounts(unverifiedOnly: unverified),
                continueURL: continueUrl, rate: try rate.map { try CampaignOptionText.rate($0) },
                startAt: try startAt.map(CampaignOptionText.time) ?? Date(),
                linkLifetime: try linkLifetime.map { try CampaignOptionText.linkLifetime($0) }, rejectsPath: rejects,
                templates: try templates.map { try TemplateFile.read(directory: $0) })
            let campaigns = try await Runtime.load(global).actions().campaigns
            let started = Date()
            let result = try campaigns.createCampaign(request)
            let seconds = Date().timeIntervalSince(started)
            let summary = result.summary
            let rows = summary.imported + summary.rejected + summary.alreadyImported
            print(
                "campaign \(result.campaign.id) \"\(result.campaign.name)\": imported \(summary.imported), rejected \(summary.rejected), "
                    + "already imported \(summary.alreadyImported) (rejects: \(result.rejectsPath)); "
                    + String(format: "%.0f rows/s", seconds > 0 ? Double(rows) / seconds : 0))
        }
    }
}

/// `herald campaigns list`.
struct ListCampaigns: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List campaigns with their progress.")
    @OptionGroup var global: GlobalOptions
    @OptionGroup var output: OutputOptions

    static let columns: [RowWriter.Column] = [
        .init("ID", key: "id"), .init("NAME", key: "name"), .init("ACTION", key: "action"), .init("STATE", key: "state"),
        .init("STARTS", key: "startAt"), .init("SENT", key: "sent"), .init("FAILED", key: "failed"), .init("IMPORTED", key: "imported"),
        .init("REJECTED", key: "rejected"),
    ]

    func run() async throws {
        try await reportingErrors {
            let format = try output.resolved()
            // Counts only: a full report (funnel, percentiles) per campaign would read every sent row.
            let campaigns = try await Runtime.load(global).actions().campaigns
            let rows = try campaigns.campaigns()
            let paces = try campaigns.paces(rows)
            let writer = RowWriter(format: format, columns: Self.columns)
            for progress in rows {
                let campaign = progress.campaign
                let cells: [String?] = [
                    "\(campaign.id)", campaign.name, campaign.kind.rawValue, progress.status.rawValue, campaign.startAt.iso8601,
                    "\(progress.sent)", "\(progress.failed)", "\(progress.total)", "\(campaign.rejected)",
                ]
                try writer.write(cells, json: CampaignJSON(progress: progress, pace: paces[campaign.id]))
            }
            writer.finish(summary: "\(rows.count) campaign(s)")
        }
    }
}

/// Shared shape of pause / resume / cancel.
protocol CampaignControl: AsyncParsableCommand {
    var global: GlobalOptions { get }
    var id: Int64 { get }
    func apply(_ campaigns: CampaignsService) throws -> String
}

extension CampaignControl {
    func run() async throws {
        try await reportingErrors { print(try apply(try await Runtime.load(global).actions().campaigns)) }
    }
}

struct PauseCampaign: CampaignControl {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Stop sending a campaign; its rows stay queued.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    func apply(_ campaigns: CampaignsService) throws -> String {
        try campaigns.pauseCampaign(id: id)
        return "campaign \(id) paused"
    }
}

struct ResumeCampaign: CampaignControl {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Send a paused campaign again.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    func apply(_ campaigns: CampaignsService) throws -> String {
        try campaigns.resumeCampaign(id: id)
        return "campaign \(id) resumed"
    }
}

struct CancelCampaign: CampaignControl {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel a campaign: unsent rows become cancelled.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    func apply(_ campaigns: CampaignsService) throws -> String {
        "campaign \(id) cancelled: \(try campaigns.cancelCampaign(id: id)) unsent message(s) cancelled"
    }
}

/// `herald campaigns report`.
struct ReportCampaign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "report", abstract: "Counts, replies, clicks, redemptions and the funnel.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    @Option(help: "Output format: text, json or html (a page to keep or mail).") var format = "text"

    func run() async throws {
        try await reportingErrors {
            guard ["text", "json", "html"].contains(format) else { throw HeraldError(.argumentError, "--format: expected text, json or html") }
            let report = try await Runtime.load(global).actions().reports.report(campaign: id)
            switch format {
            case "json": print(ReportFormatter.json(report))
            case "html": print(ReportFormatter.html(report))
            default: print(ReportFormatter.text(report))
            }
        }
    }
}

import ArgumentParser
import Foundation
import HeraldCore
import HeraldMail

/// `herald campaigns preview`: the email one recipient of a campaign will get — their locale, name and CSV columns,
/// the campaign's continue URL and link lifetime, the unsubscribe line — with a sample code; nothing is sent.
struct PreviewCampaign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Render the email a campaign's recipient will get, with its own templates if it has them (nothing is sent).",
        discussion: "Run it after create and before the start (--start-at, or pause first) to check what goes out.")

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The campaign's id (herald campaigns list).") var id: Int64
    @Option(help: "The recipient to preview (default: the most recently queued one).") var email: String?
    @Option(help: "Write to FILE.eml (the whole message) or FILE.html (the HTML part) instead of printing the message.")
    var out: String?

    func run() async throws {
        try await reportingErrors {
            let runtime = try await Runtime.load(global)
            let actions = try runtime.actions()
            _ = try actions.campaigns.campaign(id: id)
            var search = MessageSearch(campaign: id)
            search.email = try email.map { try EmailAddress($0) }
            guard let message = try actions.console.searchMessages(search, limit: 1).first else {
                throw HeraldError(.notFound, email.map { "\($0) is not a recipient of campaign \(id)" } ?? "campaign \(id) has no rows")
            }
            let composer = try actions.campaigns.composer(forCampaign: id)
            let input = MessageComposer.input(for: message, code: MessageComposer.sampleCode, date: Date())
            try PreviewOutput.emit(
                try composer.compose(input), composer.content(input), to: out, about: "to \(message.recipient.value), ")
        }
    }
}

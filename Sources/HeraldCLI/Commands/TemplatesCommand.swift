import ArgumentParser
import Foundation
import HeraldCore
import HeraldMail

/// `herald templates …`: work with the email templates.
struct TemplatesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "templates", abstract: "Work with the email templates.", subcommands: [PreviewCommand.self])
}

/// `herald templates preview`: renders one action with sample data; sends nothing.
struct PreviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview", abstract: "Render an action's email with sample data (nothing is sent or stored).")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "sign-in | verify-email | reset-password | verify-and-change-email") var action: String
    @Option(help: "Language, e.g. de or pl-PL (falls back to the default locale).") var locale: String?
    @Option(help: "Write to FILE.eml (the whole message) or FILE.html (the HTML part) instead of printing the message.")
    var out: String?

    func run() async throws {
        try await reportingErrors {
            let kind = try ActionKind(argument: action)
            let runtime = try await Runtime.load(global)
            let composer = try runtime.composer()
            let configuration = runtime.configuration
            let input = try composer.sampleInput(
                kind, locale: try locale.map { try LocaleTag($0) } ?? configuration.links.defaultLocale, links: configuration.links)
            try PreviewOutput.emit(try composer.compose(input), composer.content(input), to: out)
        }
    }
}

/// Where a preview goes: the whole message to stdout, or `FILE.eml` (the message) / `FILE.html` (its HTML part).
enum PreviewOutput {
    static func emit(_ composed: MessageComposer.Composed, _ content: RenderedContent, to out: String?, about: String = "") throws {
        guard let out else {
            FileHandle.standardOutput.write(Data(composed.bytes))
            return
        }
        let bytes = out.lowercased().hasSuffix(".html") ? Array(content.html.utf8) : composed.bytes
        guard FileManager.default.createFile(atPath: out, contents: Data(bytes)) else {
            throw HeraldError(.argumentError, "cannot write \(out)")
        }
        print("wrote \(out) (\(about)\(content.locale) templates, subject: \(content.subject))")
    }
}

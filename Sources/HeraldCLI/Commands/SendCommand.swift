import ArgumentParser
import Foundation
import HeraldCore

/// `herald send`: validates and queues one action email, printing its outbox id.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Queue one action email (prints the outbox id), or one per address in a file.",
        discussion: """
            Actions: sign-in, verify-email, reset-password, verify-and-change-email. Nothing is written when the \
            input is invalid; with --recipients, every line is checked before any is queued.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "sign-in | verify-email | reset-password | verify-and-change-email")
    var action: String

    @Argument(help: "The account's email address (omit with --recipients).")
    var email: String?

    @Option(help: "A file with one address per line (blank lines and # comments skipped); same options for all.")
    var recipients: String?

    @Option(help: "The new address (verify-and-change-email); the email goes there.") var newEmail: String?
    @Option(help: "Where the link continues after the action; its host must be authorized.") var continueUrl: String?
    @Option(help: "Template and link language, e.g. pl or pl-PL.") var locale: String?
    @Option(help: "The recipient's name, used in the greeting and the To header.") var displayName: String?
    @Flag(help: "The link opens the app (implied for sign-in).") var handleCodeInApp = false
    @Option(name: .customLong("ios-bundle-id")) var iOSBundleId: String?
    @Option var androidPackageName: String?
    @Flag var androidInstallApp = false
    @Option var androidMinimumVersion: String?
    @Option(help: "Hosting link domain: wraps the link as https://<domain>/__/auth/links?link=….") var linkDomain: String?
    @Option(help: "Rejected: Firebase Dynamic Links is shut down; use --link-domain.") var dynamicLinkDomain: String?

    func run() async throws {
        try await reportingErrors {
            let kind = try ActionKind(argument: action)
            let runtime = try await Runtime.load(global)
            let settings = ActionCodeSettings(
                url: continueUrl, handleCodeInApp: handleCodeInApp || kind == .signIn, iOSBundleId: iOSBundleId,
                androidPackageName: androidPackageName, androidInstallApp: androidInstallApp,
                androidMinimumVersion: androidMinimumVersion, linkDomain: linkDomain, dynamicLinkDomain: dynamicLinkDomain)
            let links = runtime.configuration.links
            let composer = try runtime.composer()  // template or sender problems surface now, not in the worker
            let domain = String(composer.from.address.domain)
            func request(_ address: String) throws -> ActionRequest {
                try ActionRequest(
                    kind: kind, email: address, newEmail: newEmail, settings: settings, locale: locale, displayName: displayName,
                    links: links)
            }
            switch (email, recipients) {
            case (let email?, nil):
                let validated = try request(email)
                print(try runtime.openStore().enqueue(validated, messageDomain: domain))
            case (nil, let path?):
                let lines = try Self.addresses(in: path)
                for (number, address) in lines { _ = try Self.onLine(number, path) { try request(address) } }
                // Every line passed the same validation above, so building its request again cannot fail.
                let queued = try runtime.openStore().enqueue(lines.lazy.map { try! request($0.address) }, messageDomain: domain)
                print("queued \(queued) message(s)")
            default:
                throw HeraldError(.argumentError, "give either one <email> or --recipients FILE")
            }
        }
    }

    /// The addresses in a recipients file with their line numbers.
    static func addresses(in path: String) throws -> [(line: Int, address: String)] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldError(.argumentError, "cannot read recipients file \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw HeraldError(.argumentError, "\(path) is not valid UTF-8")
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            let address = line.trimmingCharacters(in: .whitespacesAndNewlines)
            return address.isEmpty || address.hasPrefix("#") ? nil : (index + 1, address)
        }
    }

    /// Prefixes a failure with the file and line it came from.
    static func onLine<T>(_ line: Int, _ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as HeraldError {
            throw HeraldError(error.code, "\(path):\(line): \(error.detail)")
        }
    }
}

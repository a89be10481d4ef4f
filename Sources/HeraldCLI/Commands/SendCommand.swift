import ArgumentParser
import HeraldCore

/// `herald send`: validates and queues one action email, printing its outbox id.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Queue one action email; prints the outbox id.",
        discussion: "Actions: sign-in, verify-email, reset-password, verify-and-change-email. Nothing is written when the input is invalid."
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "sign-in | verify-email | reset-password | verify-and-change-email")
    var action: String

    @Argument(help: "The account's email address.")
    var email: String

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
            guard let kind = ActionKind(rawValue: action) else {
                throw HeraldError(.argumentError, "unknown action '\(action)'; expected one of \(ActionKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let runtime = try await Runtime.load(global)
            let settings = ActionCodeSettings(
                url: continueUrl, handleCodeInApp: handleCodeInApp || kind == .signIn, iOSBundleId: iOSBundleId,
                androidPackageName: androidPackageName, androidInstallApp: androidInstallApp,
                androidMinimumVersion: androidMinimumVersion, linkDomain: linkDomain, dynamicLinkDomain: dynamicLinkDomain)
            let request = try ActionRequest(
                kind: kind, email: email, newEmail: newEmail, settings: settings, locale: locale, displayName: displayName,
                links: runtime.configuration.links)
            let composer = try runtime.composer()  // template or sender problems surface now, not in the worker
            let id = try runtime.openStore().enqueue(request, messageDomain: String(composer.from.address.domain))
            print(id)
        }
    }
}

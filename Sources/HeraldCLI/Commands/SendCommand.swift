import ArgumentParser
import Foundation
import HeraldActions
import HeraldCore
import HeraldStore

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
    @Option(name: .customLong("ios-bundle-id"), help: "The iOS app that opens the link (its bundle id).") var iOSBundleId: String?
    @Option(help: "The Android app that opens the link (its package name).") var androidPackageName: String?
    @Flag(help: "Offer to install the Android app when it is missing.") var androidInstallApp = false
    @Option(help: "The lowest version of the Android app that may open the link.") var androidMinimumVersion: String?
    @Option(help: "Hosting link domain: wraps the link as https://<domain>/__/auth/links?link=….") var linkDomain: String?
    @Option(help: "Rejected: Firebase Dynamic Links is shut down; use --link-domain.") var dynamicLinkDomain: String?

    func run() async throws {
        try await reportingErrors {
            let kind = try ActionKind(argument: action)
            let settings = ActionCodeSettings(
                url: continueUrl, handleCodeInApp: handleCodeInApp || kind == .signIn, iOSBundleId: iOSBundleId,
                androidPackageName: androidPackageName, androidInstallApp: androidInstallApp,
                androidMinimumVersion: androidMinimumVersion, linkDomain: linkDomain, dynamicLinkDomain: dynamicLinkDomain)
            var request = SendRequest(kind: kind, newEmail: newEmail, settings: settings, locale: locale, displayName: displayName)
            // Template or sender problems surface now, not in the worker.
            let sending = try await Runtime.load(global).actions().sending
            switch (email, recipients) {
            case (let email?, nil):
                request.email = email
                let result = try await sending.send(request, as: .admin)
                guard case .queued(let id) = result.delivery else { throw HeraldError(.argumentError, "nothing was queued") }
                print(id)
            case (nil, let path?):
                let lines = try Self.addresses(in: path)
                let addresses = lines.map(\.address)
                do {
                    let key = try SendingService.bulkKey(for: request, addresses: addresses)
                    print(Self.summary(try sending.sendBulk(request, to: addresses, bulkKey: key)))
                } catch let refusal as BulkSendError {
                    let place = "\(path):\(lines[refusal.index].line)"
                    throw HeraldError(refusal.error.code, refusal.error.detail.isEmpty ? place : "\(place): \(refusal.error.detail)")
                } catch let failure as BulkEnqueueFailure {
                    throw Self.partialFailure(failure)
                }
            default:
                throw HeraldError(.argumentError, "give either one <email> or --recipients FILE")
            }
        }
    }

    /// What a bulk send queued, e.g. `queued 3000 message(s); 5000 already queued by an earlier run of this file`.
    static func summary(_ result: BulkEnqueueResult) -> String {
        let queued = "queued \(result.newlyQueued) message(s)"
        guard result.alreadyQueued > 0 else { return queued }
        return "\(queued); \(result.alreadyQueued) already queued by an earlier run of this file"
    }

    /// A bulk send that failed part-way, as one line saying how much is queued and that a re-run queues the rest.
    static func partialFailure(_ failure: BulkEnqueueFailure) -> HeraldError {
        let cause = failure.error as? HeraldError ?? HeraldError(.unavailable, "\(failure.error)")
        let progress =
            "queued \(failure.committed.total) of \(failure.requested) before the failure; "
            + "run the same command again to queue the rest (already queued addresses are skipped)"
        return HeraldError(cause.code, cause.detail.isEmpty ? progress : "\(cause.detail): \(progress)")
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
}

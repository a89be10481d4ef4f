import Foundation
import HeraldCore
import HeraldMail
import HeraldStore
import HeraldTesting
import HeraldWorker
import Logging

/// A worker over a real `SQLiteStore` in a scratch directory and the repository's real templates,
/// sending through a `ScriptedMailServer`.
struct WorkerFixture {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let messageDomain = "herald.test"

    let scratch = ScratchDirectory()
    let databasePath: String
    let store: SQLiteStore
    let templates: TemplateLibrary

    init() throws {
        databasePath = scratch.path("ledger.sqlite")
        store = try SQLiteStore(path: databasePath)
        let directory = Self.repositoryRoot.appendingPathComponent("templates").path
        templates = try TemplateLibrary(directory: directory, defaultLocale: LocaleTag("en"))
    }

    /// A worker with the default configuration, then `change`.
    func worker(sendingTo server: ScriptedMailServer, _ change: (inout HeraldConfiguration) -> Void = { _ in }) throws -> Worker {
        try Self.worker(store: store, templates: templates, sendingTo: server, change)
    }

    /// A worker over `store` (e.g. a second handle on the same file).
    static func worker(
        store: SQLiteStore, templates: TemplateLibrary, sendingTo server: ScriptedMailServer,
        _ change: (inout HeraldConfiguration) -> Void = { _ in }
    ) throws -> Worker {
        var configuration = HeraldConfiguration()
        change(&configuration)
        return Worker(
            store: store, composer: try MessageComposer(configuration: configuration, templates: templates), configuration: configuration,
            logger: Logger(label: "herald.worker.tests") { _ in SwiftLogNoOpLogHandler() }, makeTransport: { server.connect() })
    }

    @discardableResult
    func enqueue(_ kind: ActionKind = .verifyEmail, _ email: String = "ada@example.com") throws -> Int64 {
        let settings = kind == .signIn ? ActionCodeSettings(url: "https://localhost/finish", handleCodeInApp: true) : ActionCodeSettings()
        let newEmail = kind == .verifyAndChangeEmail ? "new-" + email : nil
        let request = try ActionRequest(kind: kind, email: email, newEmail: newEmail, settings: settings, links: HeraldConfiguration.Links())
        return try store.enqueue(request, messageDomain: Self.messageDomain)
    }
}

import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Synchronization

/// What one console `POST` noted about the change it made (`ConsoleController.logAction`), kept until the handler has
/// answered; `ConsoleAuthMiddleware` then writes it to the ledger's action log with the session's actor, or a
/// `failed` entry when the handler refused the request without noting anything.
final class ConsoleActionNotes: Sendable {
    /// One change as the handler describes it.
    struct Note: Sendable {
        let action: String
        let target: String?
        let detail: String?
        let result: ConsoleAction.Result
    }

    /// The notes of the request being handled; nil outside a console `POST`.
    @TaskLocal static var current: ConsoleActionNotes?

    private let notes = Mutex<[Note]>([])

    func add(_ note: Note) { notes.withLock { $0.append(note) } }

    var all: [Note] { notes.withLock { $0 } }

    /// The log entries of a finished `POST` to `path` that answered `status`: its notes, or one `failed` entry
    /// naming the path when it answered an error without noting a change (a page asking to confirm notes nothing).
    func entries(actor: String, path: String, status: HTTPResponse.Status, at: Date = Date()) -> [ConsoleAction] {
        let noted = all
        guard noted.isEmpty else {
            return noted.map { ConsoleAction(at: at, actor: actor, action: $0.action, target: $0.target, detail: $0.detail, result: $0.result) }
        }
        guard status.code >= 400 else { return [] }
        return [ConsoleAction(at: at, actor: actor, action: Self.action(path: path), detail: "answered \(status.code)", result: .failed)]
    }

    /// A path as an action: `/admin/console/suppressions/add` is `suppressions/add`.
    static func action(path: String) -> String {
        var rest = Substring(path)
        for prefix in ["\(ConsoleSessions.path)/", "console/"] where rest.hasPrefix(prefix) { rest = rest.dropFirst(prefix.count) }
        return String(rest.prefix(200))
    }
}

import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/console/activity`: the ledger's log of changes made in the console, newest first, a page at a time, as
/// `herald console activity` lists it.
extension ConsoleController {
    static let activityPath = "/admin/console/activity"
    static let activityLimit = 50

    @Sendable func activityPage(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let before: Int64?
        switch request.uri.queryParameters["before"].map(String.init) {
        case nil, "": before = nil
        case let text?:
            guard let id = Int64(text), id > 0 else {
                return failure(HeraldError(.argumentError, "before must be an entry's id (a positive number)"), "Activity", context: context)
            }
            before = id
        }
        let found: [ConsoleAction]
        do {
            found = try await offload { [console] in
                try console.actions(ConsoleActionQuery(before: before, limit: Self.activityLimit + 1))
            }
        } catch {
            return failure(error, "Activity", context: context)
        }
        let entries = found.prefix(Self.activityLimit)
        let rows = entries.map { entry in
            """
            <tr id="action-\(entry.id)" data-result="\(entry.result.rawValue)"><td>\(entry.id)</td><td>\(entry.at.iso8601)</td>\
            <td class="actor">\(ConsolePage.escape(entry.actor))</td><td class="action">\(ConsolePage.escape(entry.action))</td>\
            <td class="target">\(ConsolePage.escape(entry.target ?? ""))</td><td class="detail">\(ConsolePage.escape(entry.detail ?? ""))</td>\
            <td class="result">\(entry.result.rawValue)</td></tr>
            """
        }
        var links: [String] = []
        if found.count > Self.activityLimit, let last = entries.last {
            links.append(#"<a id="older" href="\#(Self.activityPath)?before=\#(last.id)">Older</a>"#)
        }
        if before != nil { links.append(#"<a id="newest" href="\#(Self.activityPath)">Newest</a>"#) }
        let body = """
            <p class="muted">Every change made in the console, newest first, \(Self.activityLimit) a page: who (the session's role and \
            label), what, and how it ended. <code>herald console activity</code> lists the same.</p>
            \(ConsolePage.table(
                id: "activity", ["#", "Time (UTC)", "Actor", "Action", "Target", "Detail", "Result"], Array(rows),
                empty: "Nothing has been changed in the console yet."))
            <p>\(links.joined(separator: " · "))</p>
            """
        return ConsolePage.response(ConsolePage.html("Activity", body, session: context.consoleSession, current: "activity"))
    }
}

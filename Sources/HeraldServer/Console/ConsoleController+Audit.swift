import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/audit/search`: the `herald audit` filters as a form, the first rows, and the exports.
extension ConsoleController {
    static let auditLimit = 500

    /// Stops the scan once the page has its rows.
    private struct Enough: Error {}

    @Sendable func auditSearch(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let decoded = try? request.uri.decodeQuery(as: AuditQuery.self, context: context)
        let query = decoded ?? AuditQuery()
        func field(_ name: String, _ label: String, _ value: String?, _ placeholder: String = "") -> String {
            #"<label>\#(label) <input name="\#(name)" value="\#(ConsolePage.escape(value ?? ""))" placeholder="\#(placeholder)"></label>"#
        }
        let statuses = AuditFilter.Status.allCases.map(\.rawValue)
        let form = """
            <form id="audit" class="filters" method="get" action="/admin/audit/search">
            \(field("email", "Email", query.email, "ada@example.com"))\(field("campaign", "Campaign", query.campaign))
            <label>Action <select name="action">\(ConsolePage.options(ActionKind.allCases.map(\.rawValue), selected: query.action))</select></label>
            \(field("since", "Since", query.since, "2026-11-01T00:00:00Z"))\(field("until", "Until", query.until, "ISO 8601"))
            <label>Status <select name="status">\(ConsolePage.options(statuses, selected: query.status))</select></label>
            <button id="audit-search" type="submit">Search</button></form>
            """
        var filter: AuditFilter
        do {
            guard decoded != nil else { throw HeraldError(.argumentError, "the search could not be read: give each field once") }
            filter = try query.filter()
            filter.newestFirst = true
        } catch let error as HeraldError {
            let page = ConsolePage.html("Audit", form + ConsolePage.error(error.description), session: context.consoleSession, current: "audit")
            return ConsolePage.response(page, status: .badRequest)
        }
        let newestFirst = filter
        let rows: [AuditRow]
        do {
            rows = try await offload {
                var rows: [AuditRow] = []
                do {
                    try reports.audit(newestFirst) { row in
                        rows.append(row)
                        if rows.count > Self.auditLimit { throw Enough() }
                    }
                } catch is Enough {}
                return rows
            }
        } catch {
            return failure(error, "Audit", context: context)
        }
        let filters = query.queryString
        let exports = """
            <p>Export every matching link: <a id="export-csv" href="/admin/audit?\(ConsolePage.escape(filters.isEmpty ? "format=csv" : filters + "&format=csv"))">CSV</a> · \
            <a id="export-jsonl" href="/admin/audit\(ConsolePage.escape(filters.isEmpty ? "" : "?" + filters))">JSON lines</a></p>
            """
        let tableRows = rows.prefix(Self.auditLimit).map { row in
            let redeemed = row.redeemedWith == "typed" ? "redeemed (code typed)" : "redeemed (link clicked)"
            let status = row.redeemedAt != nil ? redeemed : row.expired ? "expired" : row.superseded ? "superseded" : "-"
            return """
                <tr><td><a href="/admin/messages/\(row.id)">\(row.id)</a></td><td>\(ConsolePage.escape(row.recipient))</td>\
                <td>\(ConsolePage.escape(row.action))</td><td>\(row.campaign.map(String.init) ?? "")</td><td>\(ConsolePage.escape(row.state))</td>\
                <td>\(row.queuedAt.iso8601)</td><td>\(row.sentAt?.iso8601 ?? "")</td><td>\(ConsolePage.escape(row.smtpReply ?? ""))</td>\
                <td>\(row.firstClickAt?.iso8601 ?? "")</td><td>\(row.redeemedAt?.iso8601 ?? "")</td><td>\(status)</td>\
                <td>\(ConsolePage.escape(row.feedback ?? ""))</td></tr>
                """
        }
        let more = rows.count > Self.auditLimit ? #"<p class="muted">The newest \#(Self.auditLimit) shown; the exports have them all.</p>"# : ""
        let table = ConsolePage.table(
            id: "audit-rows",
            ["ID", "Recipient", "Action", "Campaign", "State", "Queued", "Sent", "SMTP reply", "First click", "Redeemed", "Link", "Feedback"],
            tableRows, empty: "No links match.")
        let body = form + exports + table + more
        return ConsolePage.response(ConsolePage.html("Audit", body, session: context.consoleSession, current: "audit"))
    }
}

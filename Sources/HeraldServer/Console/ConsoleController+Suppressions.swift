import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/console/suppressions`: the suppression list as `herald suppressions` has it: newest first a page at a time,
/// one address looked up, addresses added and removed, and the whole list as CSV.
///
/// The console's paths sit under `/admin/console/` because `/admin/suppressions` is the bearer-token JSON API.
extension ConsoleController {
    static let suppressionsPath = "/admin/console/suppressions"
    static let suppressionLimit = 100

    /// The list's query; empty fields mean "any".
    struct SuppressionQuery: Decodable {
        var email: String?
        var reason: String?
        var after: String?
    }

    /// The add form's fields: addresses one a line (or separated by commas or spaces), as `herald suppressions add`
    /// takes them.
    struct SuppressionAddFields: Decodable {
        var emails: String?
        var reason: String?
        var scope: String?
        var detail: String?
    }

    struct SuppressionRemoveFields: Decodable {
        var email: String?
    }

    /// A form's reason; nil when blank.
    static func suppressionReason(_ text: String?) throws -> Suppression.Reason? {
        guard let text = nonEmpty(text) else { return nil }
        guard let reason = Suppression.Reason(rawValue: text) else {
            throw HeraldError(
                .argumentError, "unknown reason \(text); expected \(Suppression.Reason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return reason
    }

    /// What a finished change says on the list (counts only, never text from the request).
    static func suppressionNotice(_ query: [String: String]) -> String? {
        switch query["done"] {
        case "added":
            let added = query["added"].flatMap(Int.init) ?? 0
            let already = query["already"].flatMap(Int.init) ?? 0
            return "Suppressed \(added) address(es); \(already) already were."
        case "removed": return "Removed the address from the list: Herald mails it again."
        case "absent": return "Nothing changed: the address was not on the list."
        default: return nil
        }
    }

    @Sendable func suppressionsPage(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let session = context.consoleSession
        let decoded = try? request.uri.decodeQuery(as: SuppressionQuery.self, context: context)
        let query = decoded ?? SuppressionQuery()
        let reasons = Suppression.Reason.allCases.map(\.rawValue)
        let search = """
            <form id="suppression-search" class="filters" method="get" action="\(Self.suppressionsPath)">
            <label>Address <input name="email" type="email" value="\(ConsolePage.escape(query.email ?? ""))"></label>
            <label>Reason <select name="reason">\(ConsolePage.options(reasons, selected: query.reason))</select></label>
            <button id="suppression-search-button" type="submit">Search</button></form>
            """
        let reasonOptions = reasons.map { value in
            #"<option value="\#(value)"\#(value == Suppression.Reason.manual.rawValue ? " selected" : "")>\#(value)</option>"#
        }.joined()
        let scopeOptions =
            #"<option value="">by reason (campaigns for unsubscribe, else all)</option>"#
            + Suppression.Scope.allCases.map { #"<option value="\#($0.rawValue)">\#($0.rawValue)</option>"# }.joined()
        let add = ConsolePage.changing(
            """
            <h2>Add</h2>
            <form id="suppression-add" class="filters" method="post" action="\(Self.suppressionsPath)/add">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(session?.csrf ?? ""))">
            <label>Addresses (one a line) <textarea name="emails" rows="3" cols="32" required></textarea></label>
            <label>Reason <select name="reason">\(reasonOptions)</select></label>
            <label>Scope <select name="scope">\(scopeOptions)</select></label>
            <label>Note <input name="detail" maxlength="1000"></label>
            <button id="suppression-add-button" type="submit">Suppress</button></form>
            """)
        func page(_ content: String, status: HTTPResponse.Status = .ok) -> Response {
            ConsolePage.response(ConsolePage.html("Suppressions", content, session: session, current: "suppressions"), status: status)
        }
        let reason: Suppression.Reason?
        let after: SuppressionCursor?
        do {
            guard decoded != nil else { throw HeraldError(.argumentError, "the search could not be read: give each field once") }
            reason = try Self.suppressionReason(query.reason)
            after = try nonEmpty(query.after).map { text in
                guard let cursor = SuppressionCursor(text) else {
                    throw HeraldError(.argumentError, "after must be a page's end as the Next page link gives it")
                }
                return cursor
            }
        } catch let error as HeraldError {
            return page(search + ConsolePage.error(error.description) + add, status: .badRequest)
        }
        let entries: [Suppression]
        var more = false
        do {
            if let email = nonEmpty(query.email) {
                entries = try await offload { try feedback.suppression(email: email) }.map { [$0] } ?? []
            } else {
                let found = try await offload {
                    try feedback.recentSuppressions(reason: reason, after: after, limit: Self.suppressionLimit + 1)
                }
                more = found.count > Self.suppressionLimit
                entries = Array(found.prefix(Self.suppressionLimit))
            }
        } catch let error as HeraldError where error.code != .unavailable {
            return page(search + ConsolePage.error(error.description) + add, status: .badRequest)
        } catch {
            return failure(error, "Suppressions", context: context)
        }
        let csrf = session?.csrf ?? ""
        let rows = entries.map { entry in
            """
            <tr data-email="\(ConsolePage.escape(entry.email))"><td class="email">\(ConsolePage.escape(entry.email))</td>\
            <td class="reason">\(entry.reason.rawValue)</td><td class="scope">\(entry.scope.rawValue)</td>\
            <td class="detail">\(ConsolePage.escape(entry.detail ?? ""))</td><td>\(entry.createdAt.iso8601)</td>\
            <td>\(entry.expiresAt?.iso8601 ?? "")</td>\
            <td>\(ConsolePage.form(action: "\(Self.suppressionsPath)/remove", csrf: csrf, fields: ["email": entry.email], button: "Remove", buttonClass: "cancel remove"))</td></tr>
            """
        }
        var links: [String] = []
        let reasonQuery = reason.map { "reason=\($0.rawValue)" }
        if more, let last = entries.last {
            let next = (reasonQuery.map { [$0] } ?? []) + ["after=\(Self.queryEscape(SuppressionCursor(after: last).description))"]
            links.append(#"<a id="next-page" href="\#(Self.suppressionsPath)?\#(ConsolePage.escape(next.joined(separator: "&")))">Next page</a>"#)
        }
        if nonEmpty(query.after) != nil || nonEmpty(query.email) != nil {
            links.append(#"<a id="first-page" href="\#(Self.suppressionsPath)">First page</a>"#)
        }
        let export = "\(Self.suppressionsPath)/export" + (reasonQuery.map { "?\($0)" } ?? "")
        let empty = nonEmpty(query.email) != nil ? "That address is not suppressed." : "No suppressed addresses."
        let paging = nonEmpty(query.email) == nil ? #"<p class="muted">Newest first, \#(Self.suppressionLimit) a page.</p>"# : ""
        let done = Self.suppressionNotice(request.uri.queryParameters.reduce(into: [:]) { $0[String($1.key)] = String($1.value) })
        let body = """
            \(ConsolePage.notice(done))\(search)
            <p>Export: <a id="export-csv" href="\(ConsolePage.escape(export))">CSV</a> (the whole list\(reason == nil ? "" : " of this reason"), \
            as <code>herald suppressions export</code> writes it)</p>
            \(paging)\(ConsolePage.table(id: "suppressions", ["Address", "Reason", "Scope", "Detail", "Since (UTC)", "Lapses", ""], rows, empty: empty))
            <p>\(links.joined(separator: " · "))</p>
            \(add)
            """
        return page(body)
    }

    /// `POST /admin/console/suppressions/add`.
    @Sendable func addSuppressions(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let fields = try await ConsoleForm.read(&request, as: SuppressionAddFields.self) ?? SuppressionAddFields()
        let emails = (fields.emails ?? "").split { $0 == "\n" || $0 == "\r" || $0 == "," || $0 == " " || $0 == "\t" }.map(String.init)
        let added: Int
        do {
            guard !emails.isEmpty else { throw HeraldError(.argumentError, "name at least one address") }
            guard emails.count <= 10_000 else { throw HeraldError(.argumentError, "at most 10000 addresses at once") }
            let reason = try Self.suppressionReason(fields.reason) ?? .manual
            let scope = try nonEmpty(fields.scope).map { text in
                guard let scope = Suppression.Scope(rawValue: text) else { throw HeraldError(.argumentError, "scope must be all or campaigns") }
                return scope
            }
            let detail = nonEmpty(fields.detail)
            added = try await offload { try feedback.suppress(emails: emails, reason: reason, scope: scope, detail: detail) }
        } catch {
            return failure(error, "Suppressions", context: context)
        }
        let already = Set(emails.map { $0.lowercased() }).count - added
        let target = emails.count == 1 ? emails[0].lowercased() : "\(emails.count) addresses"
        logAction("suppressed", target: target, context: context, ["added": "\(added)", "addresses": "\(emails.count)"])
        return ConsolePage.redirect(to: "\(Self.suppressionsPath)?done=added&added=\(added)&already=\(max(0, already))")
    }

    /// `POST /admin/console/suppressions/remove`.
    @Sendable func removeSuppression(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let fields = try await ConsoleForm.read(&request, as: SuppressionRemoveFields.self)
        let removed: Bool
        guard let email = nonEmpty(fields?.email) else {
            return failure(HeraldError(.argumentError, "name the address to remove"), "Suppressions", context: context)
        }
        do {
            removed = try await offload { try feedback.unsuppress(email: email) }
        } catch {
            return failure(error, "Suppressions", context: context)
        }
        logAction("unsuppressed", target: email.lowercased(), context: context, ["removed": "\(removed)"])
        return ConsolePage.redirect(to: "\(Self.suppressionsPath)?done=\(removed ? "removed" : "absent")")
    }

    /// `GET /admin/console/suppressions/export[?reason=]`: the whole list as `herald suppressions export` writes it, a
    /// download.
    @Sendable func exportSuppressions(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let reason: Suppression.Reason?
        do {
            reason = try Self.suppressionReason(request.uri.queryParameters["reason"].map(String.init))
        } catch {
            return failure(error, "Suppressions", context: context)
        }
        var response = SuppressionsController.csv(feedback: feedback, reason: reason)
        response.headers[.contentDisposition] = #"attachment; filename="suppressions.csv""#
        return response
    }
}

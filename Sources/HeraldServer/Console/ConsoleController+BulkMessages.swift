import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `POST /admin/console/messages/bulk`: retry or cancel the messages ticked on the page, or every message the search
/// matches. Nothing changes before a page naming the count ("Cancel 722 messages?"), which is a dry run of the
/// same change; its button posts again with `confirm=yes`, and the change goes through `SendingService` as the
/// message page's buttons and `herald messages retry|cancel` do.
extension ConsoleController {
    /// The bulk form's own fields; the search's are read from the same body as `MessageFields`.
    struct BulkFields: Decodable {
        var op: String?
        var ids: [String]?
        var confirm: String?
    }

    /// A bulk button: the change, and whether it takes the ticked rows or the whole search.
    struct BulkOperation: Sendable {
        let change: MessageChange
        let wholeSearch: Bool

        init(_ text: String?) throws {
            let parts = (text ?? "").split(separator: "-", maxSplits: 1).map(String.init)
            guard parts.count == 2, let change = MessageChange(rawValue: parts[0]), ["selected", "search"].contains(parts[1]) else {
                throw HeraldError(.argumentError, "choose retry or cancel, of the ticked messages or of the whole search")
            }
            self.change = change
            wholeSearch = parts[1] == "search"
        }

        var name: String { "\(change.rawValue)-\(wholeSearch ? "search" : "selected")" }
    }

    static let bulkPath = "/admin/console/messages/bulk"

    /// Most messages one selection may name.
    static let bulkSelectionLimit = 1000

    static let bulkStyle = """
        .bulk{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:center;margin:0 0 12px} td.pick{text-align:center}
        """

    /// The change's rows: the ticked ids, in the states the message page's buttons take them from; or the search,
    /// in its state or else the states `herald messages retry|cancel` take by default.
    static func bulkFilter(_ operation: BulkOperation, ids: [String], search: MessageSearch) throws -> RequeueFilter {
        guard !operation.wholeSearch else {
            return RequeueFilter(
                states: search.state.map { [$0] } ?? [], campaign: search.campaign, email: search.email, since: search.since,
                until: search.until, kind: search.kind, all: true)
        }
        let picked = try ids.map { text in
            guard let id = Int64(text), id > 0 else { throw HeraldError(.argumentError, "a ticked message is not a message id") }
            return id
        }
        guard !picked.isEmpty else {
            throw HeraldError(.argumentError, "tick at least one message, or use the buttons for every message of the search")
        }
        guard picked.count <= bulkSelectionLimit else {
            throw HeraldError(.argumentError, "at most \(bulkSelectionLimit) ticked messages at once")
        }
        return RequeueFilter(states: operation.change.states, ids: Set(picked).sorted())
    }

    @Sendable func bulkMessages(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let bulk = try await ConsoleForm.read(&request, as: BulkFields.self)
        let fields = try await ConsoleForm.read(&request, as: MessageFields.self)
        let operation: BulkOperation
        let search: MessageSearch
        let matched: RequeueResult
        let confirmed = bulk?.confirm == "yes"
        do {
            guard let bulk, let fields else { throw HeraldError(.argumentError, "the form could not be read: give each field once") }
            operation = try BulkOperation(bulk.op)
            search = try fields.search()
            let filter = try Self.bulkFilter(operation, ids: bulk.ids ?? [], search: search)
            matched = try await requeue(operation.change, filter, dryRun: !confirmed)
        } catch {
            return failure(error, "Messages", context: context)
        }
        let pairs = MessageFields.pairs(search)
        guard confirmed else { return confirmBulk(operation, matched, pairs: pairs, context: context) }
        let done = operation.change == .retry ? "retried" : "cancelled"
        logAction(
            "messages \(done)", context: context,
            ["count": "\(matched.count)", "scope": "\(operation.wholeSearch ? "search" : "selection")"])
        let query = (pairs + [("done", done), ("count", "\(matched.count)")]).map { "\($0.0)=\(Self.queryEscape($0.1))" }
        return ConsolePage.redirect(to: "\(Self.messagesPath)?" + query.joined(separator: "&"))
    }

    /// What a finished bulk change says on the list (a count only, never text from the request).
    static func bulkNotice(_ done: String?, _ count: String?) -> String? {
        guard let count = count.flatMap(Int.init) else { return nil }
        switch done {
        case "retried": return "Requeued \(count) message(s) with a fresh attempt budget and a new code."
        case "cancelled": return "Cancelled \(count) message(s)."
        default: return nil
        }
    }

    /// "Cancel 722 messages?": the count of the dry run, and a button that posts the same change with `confirm=yes`
    /// (the ticked rows it matched, or the search with its times resolved).
    private func confirmBulk(
        _ operation: BulkOperation, _ matched: RequeueResult, pairs: [(String, String)], context: HeraldRequestContext
    ) -> Response {
        let session = context.consoleSession
        let verb = operation.change == .retry ? "Retry" : "Cancel"
        let count = matched.count
        let noun = count == 1 ? "message" : "messages"
        let back = #"<a id="keep" href="\#(Self.messagesLink(pairs))">Back to the messages</a>"#
        let which = operation.wholeSearch ? "matching the search" : "of those ticked"
        guard count > 0 else {
            let states = operation.change.states.map(\.rawValue).sorted().joined(separator: ", ")
            let body = """
                <p id="bulk-none">No message \(which) can be \(operation.change == .retry ? "retried" : "cancelled") now \
                (\(verb.lowercased()) takes messages that are \(ConsolePage.escape(states))). Nothing changed.</p><p>\(back)</p>
                """
            return ConsolePage.response(ConsolePage.html("Nothing to \(verb.lowercased())", body, session: session, current: "messages"))
        }
        let what =
            operation.change == .retry
            ? "Each is queued again with a fresh attempt budget and a new code; its old link stops working."
            : "They will not be sent; a retry can queue them again later."
        var hidden = [("csrf", session?.csrf ?? ""), ("op", operation.name), ("confirm", "yes")] + pairs
        // Ticked rows are at most `bulkSelectionLimit`, as many as a match lists, so every matched one is here.
        if !operation.wholeSearch { hidden += matched.ids.map { ("ids[]", "\($0)") } }
        let inputs = hidden.map { name, value in
            #"<input type="hidden" name="\#(ConsolePage.escape(name))" value="\#(ConsolePage.escape(value))">"#
        }.joined()
        let button = operation.change == .cancel ? #" class="cancel""# : ""
        let body = """
            <p id="bulk-count">\(count) \(noun) \(which) will change. \(what)</p>
            <form id="confirm-bulk" class="bulk" method="post" action="\(Self.bulkPath)">\(inputs)\
            <button type="submit"\(button)>\(verb) \(count) \(noun)</button> \(back)</form>
            """
        return ConsolePage.response(ConsolePage.html("\(verb) \(count) \(noun)?", body, session: session, current: "messages"))
    }

    /// The result table inside the bulk form: a tick box per row, the search's fields, and the four buttons.
    func bulkForm(_ rows: [OutboxMessage], pairs: [(String, String)], csrf: String) -> String {
        let tableRows = rows.map { row in
            """
            <tr id="message-\(row.id)"><td class="pick"><input type="checkbox" name="ids[]" value="\(row.id)" \
            aria-label="Select message \(row.id)"></td><td><a href="\(Self.messagesPath)/\(row.id)">\(row.id)</a></td>\
            <td>\(row.kind.rawValue)</td><td class="recipient">\(ConsolePage.escape(row.recipient.value))</td>\
            <td class="state">\(row.state.rawValue)</td><td>\(row.attempts)</td>\
            <td>\(ConsolePage.escape(String((row.lastReply ?? "").prefix(60))))</td>\
            <td>\(row.queuedAt.iso8601)</td><td>\(row.campaignID.map(String.init) ?? "")</td></tr>
            """
        }
        let table = ConsolePage.table(
            id: "messages", ["", "ID", "Action", "Recipient", "State", "Tries", "Last reply", "Queued (UTC)", "Campaign"], tableRows,
            empty: "No messages match.")
        // A read-only session gets the table without the form: it may change nothing.
        guard !rows.isEmpty, ConsolePage.canChange else { return table }
        let hidden = ([("csrf", csrf)] + pairs).map { name, value in
            #"<input type="hidden" name="\#(name)" value="\#(ConsolePage.escape(value))">"#
        }.joined()
        return """
            <form id="bulk" method="post" action="\(Self.bulkPath)">\(hidden)\(table)
            <div class="bulk" id="bulk-actions"><span class="muted">Ticked:</span>\
            <button id="retry-selected" name="op" value="retry-selected" type="submit">Retry</button>\
            <button id="cancel-selected" name="op" value="cancel-selected" type="submit" class="cancel">Cancel</button>\
            <span class="muted">Every message of the search:</span>\
            <button id="retry-search" name="op" value="retry-search" type="submit">Retry all…</button>\
            <button id="cancel-search" name="op" value="cancel-search" type="submit" class="cancel">Cancel all…</button></div></form>
            """
    }
}

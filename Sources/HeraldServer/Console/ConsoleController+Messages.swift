import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/messages`: search the outbox a page at a time, one message's whole history, retry and cancel (of one message
/// here, of a selection or a whole search in `ConsoleController+BulkMessages.swift`).
extension ConsoleController {
    /// The search form's fields (the bulk form repeats them); empty ones mean "any".
    struct MessageFields: Decodable {
        var email: String?
        var state: String?
        var action: String?
        var campaign: String?
        /// Queued at or after, at or before: ISO 8601, `now`, or how long ago (`90s`, `10m`, `1h`, `2d`), as
        /// `herald messages --since/--until` take them.
        var since: String?
        var until: String?
        /// Keyset paging: the page of rows older, or newer, than this message id.
        var older: String?
        var newer: String?

        /// The search; relative times count back from `now`, rounded up to a whole second so that the resolved
        /// times the page's links carry (`pairs`) name the same window.
        func search(now: Date = Date()) throws -> MessageSearch {
            let whole = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.up))
            var search = MessageSearch()
            if let email = nonEmpty(email) { search.email = try EmailAddress(email) }
            if let state = nonEmpty(state) {
                guard let value = OutboxState(rawValue: state) else { throw HeraldError(.argumentError, "unknown state \(state)") }
                search.state = value
            }
            if let action = nonEmpty(action) {
                guard let kind = ActionKind(rawValue: action) else { throw HeraldError(.argumentError, "unknown action \(action)") }
                search.kind = kind
            }
            if let campaign = nonEmpty(campaign) {
                guard let id = Int64(campaign) else { throw HeraldError(.argumentError, "campaign must be a number") }
                search.campaign = id
            }
            search.since = try nonEmpty(since).map { try TimeArgument.past($0, option: "from", now: whole) }
            search.until = try nonEmpty(until).map { try TimeArgument.past($0, option: "to", now: whole) }
            search.olderThan = try Self.cursor(older)
            search.newerThan = try Self.cursor(newer)
            return search
        }

        private static func cursor(_ text: String?) throws -> Int64? {
            guard let text = nonEmpty(text) else { return nil }
            guard let id = Int64(text), id > 0 else { throw HeraldError(.argumentError, "a page link names a message id, not \(text)") }
            return id
        }

        /// The search's filters (not its cursor) as field names and values, times resolved: what the page's links
        /// and the bulk form carry, so a later page or a bulk change covers the window this page showed.
        static func pairs(_ search: MessageSearch) -> [(String, String)] {
            var pairs: [(String, String)] = []
            if let email = search.email { pairs.append(("email", email.value)) }
            if let state = search.state { pairs.append(("state", state.rawValue)) }
            if let kind = search.kind { pairs.append(("action", kind.rawValue)) }
            if let campaign = search.campaign { pairs.append(("campaign", "\(campaign)")) }
            if let since = search.since { pairs.append(("since", since.iso8601)) }
            if let until = search.until { pairs.append(("until", until.iso8601)) }
            return pairs
        }
    }

    /// One page of a keyset-paged search, newest first, and whether newer and older rows lie beyond it.
    struct MessagePage {
        let rows: [OutboxMessage]
        let hasNewer: Bool
        let hasOlder: Bool

        /// `fetched` is up to `size + 1` rows of `search`: an extra row says more lie in the direction read.
        init(_ fetched: [OutboxMessage], search: MessageSearch, size: Int) {
            let more = fetched.count > size
            let upwards = search.newerThan != nil && search.olderThan == nil
            rows = Array(upwards ? fetched.suffix(size) : fetched.prefix(size))
            hasNewer = upwards ? more : search.olderThan != nil
            hasOlder = upwards || more
        }
    }

    static let messagePageSize = 50
    static let messagesPath = "/admin/messages"

    /// `/admin/messages?…`: the query string of `pairs`, HTML-escaped for an `href`.
    static func messagesLink(_ pairs: [(String, String)]) -> String {
        let query = pairs.map { "\($0.0)=\(queryEscape($0.1))" }.joined(separator: "&")
        return ConsolePage.escape(query.isEmpty ? messagesPath : "\(messagesPath)?\(query)")
    }

    static func messageSearchForm(_ fields: MessageFields) -> String {
        let time = "ISO 8601, now, or how long ago: 90s, 10m, 1h, 2d"
        return """
            <form id="message-search" class="filters" method="get" action="\(messagesPath)">
            <label>Email <input name="email" type="email" value="\(ConsolePage.escape(fields.email ?? ""))"></label>
            <label>State <select name="state">\(ConsolePage.options(OutboxState.allCases.map(\.rawValue), selected: fields.state))</select></label>
            <label>Action <select name="action">\(ConsolePage.options(ActionKind.allCases.map(\.rawValue), selected: fields.action))</select></label>
            <label>Campaign <input name="campaign" inputmode="numeric" size="6" value="\(ConsolePage.escape(fields.campaign ?? ""))"></label>
            <label>Queued from <input name="since" size="20" placeholder="2d" title="\(time)" value="\(ConsolePage.escape(fields.since ?? ""))"></label>
            <label>to <input name="until" size="20" placeholder="now" title="\(time)" value="\(ConsolePage.escape(fields.until ?? ""))"></label>
            <button id="search" type="submit">Search</button></form>
            """
    }

    @Sendable func messages(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let decoded = try? request.uri.decodeQuery(as: MessageFields.self, context: context)
        let fields = decoded ?? MessageFields()
        let form = Self.messageSearchForm(fields)
        let search: MessageSearch
        let fetched: [OutboxMessage]
        do {
            guard decoded != nil else { throw HeraldError(.argumentError, "the search could not be read: give each field once") }
            search = try fields.search()
            fetched = try await offload { try console.searchMessages(search, limit: Self.messagePageSize + 1) }
        } catch let error as HeraldError where error.code != .unavailable {
            return ConsolePage.response(
                ConsolePage.html("Messages", form + ConsolePage.error(error.description), session: context.consoleSession, current: "messages"),
                status: .badRequest)
        } catch {
            return failure(error, "Messages", context: context)
        }
        let page = MessagePage(fetched, search: search, size: Self.messagePageSize)
        let pairs = MessageFields.pairs(search)
        var links: [String] = []
        if page.hasNewer, let first = page.rows.first {
            links.append(#"<a id="newer-page" href="\#(Self.messagesLink(pairs + [("newer", String(first.id))]))">Newer</a>"#)
        }
        if search.olderThan != nil || search.newerThan != nil {
            links.append(#"<a id="newest-page" href="\#(Self.messagesLink(pairs))">Newest</a>"#)
        }
        if page.hasOlder, let last = page.rows.last {
            links.append(#"<a id="older-page" href="\#(Self.messagesLink(pairs + [("older", String(last.id))]))">Older</a>"#)
        }
        let done = Self.bulkNotice(request.uri.queryParameters["done"].map(String.init), request.uri.queryParameters["count"].map(String.init))
        let body = """
            \(ConsolePage.notice(done))\(form)
            \(bulkForm(page.rows, pairs: pairs, csrf: context.consoleSession?.csrf ?? ""))
            <p id="paging">\(links.joined(separator: " · "))</p>
            <p class="muted">Newest first, \(Self.messagePageSize) a page.</p>
            """
        return ConsolePage.response(
            ConsolePage.html("Messages", body, session: context.consoleSession, current: "messages", style: Self.bulkStyle))
    }

    static let messageNotices = [
        "retried": "Requeued with a fresh attempt budget and a new code.", "cancelled": "Cancelled.",
        "unchanged": "Nothing changed: the message had moved on.",
    ]

    @Sendable func message(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such message"), "Message", context: context)
        }
        let history: MessageHistory
        do {
            history = try await offload { try console.messageHistory(id: id) }
        } catch {
            return failure(error, "Message \(id)", context: context)
        }
        let message = history.message
        let csrf = context.consoleSession?.csrf ?? ""
        var details: [(String, String)] = [
            ("ID", "\(message.id)"), ("Action", message.kind.rawValue), ("Recipient", message.recipient.value),
            ("Account email", message.email.value), ("New email", message.newEmail?.value ?? "-"), ("Locale", message.locale.value),
            ("State", message.state.rawValue), ("Attempts", "\(message.attempts)"), ("Last reply", message.lastReply ?? "-"),
            ("Queued", message.queuedAt.iso8601), ("Sent", message.sentAt?.iso8601 ?? "-"),
            ("Campaign", message.campaignID.map(String.init) ?? "-"), ("Message-ID", message.messageID),
        ]
        if message.possiblyDelivered > 0 {
            // The relay never answered the final dot of these attempts: each may have delivered a copy.
            details.insert(("Possibly delivered", "\(message.possiblyDelivered) attempt(s) got no reply to the end of data"), at: 8)
        }
        let dl = details.map { "<dt>\($0.0)</dt><dd>\(ConsolePage.escape($0.1))</dd>" }.joined()
        var buttons: [String] = []
        if SendingService.retryableStates.contains(message.state) {
            buttons.append(ConsolePage.form(id: "retry", action: "/admin/messages/\(id)/retry", csrf: csrf, button: "Retry", buttonClass: "retry"))
        }
        if SendingService.cancellableStates.contains(message.state) {
            buttons.append(
                ConsolePage.form(id: "cancel", action: "/admin/messages/\(id)/cancel", csrf: csrf, button: "Cancel", buttonClass: "cancel"))
        }
        let rows = history.events.map { event in
            """
            <tr data-event="\(ConsolePage.escape(event.kind))"><td>\(event.at.iso8601)</td><td>\(ConsolePage.escape(event.kind))</td>\
            <td>\(ConsolePage.escape(event.outcome ?? ""))</td><td class="reply">\(event.replyCode.map(String.init) ?? "") \
            \(ConsolePage.escape(event.detail ?? ""))</td></tr>
            """
        }
        let done = request.uri.queryParameters["done"].map(String.init).flatMap { Self.messageNotices[$0] }
        let body = """
            \(ConsolePage.notice(done))<dl id="message">\(dl)</dl><p>\(buttons.joined(separator: " "))</p>
            <h2>History</h2>\(ConsolePage.table(id: "history", ["Time (UTC)", "Event", "Outcome / by", "Reply / detail"], rows))
            <p><a href="/admin/messages?email=\(Self.queryEscape(message.recipient.value))">Other messages to this address</a></p>
            """
        return ConsolePage.response(ConsolePage.html("Message \(id)", body, session: context.consoleSession, current: "messages"))
    }

    /// The buttons of a message's page.
    enum MessageChange: String, CaseIterable, Sendable {
        case retry, cancel

        /// The states the change takes a named message from.
        var states: Set<OutboxState> { self == .retry ? SendingService.retryableStates : SendingService.cancellableStates }
    }

    /// A retry or a cancel through `SendingService`, as `herald messages retry|cancel` makes it: how many rows it
    /// matched (a dry run) or changed, and the first of their ids.
    func requeue(_ change: MessageChange, _ filter: RequeueFilter, dryRun: Bool) async throws -> RequeueResult {
        switch change {
        case .retry: return try await offload { try sending.retryMessages(filter, actor: "console", dryRun: dryRun) }
        case .cancel: return try await offload { try sending.cancelMessages(filter, actor: "console", dryRun: dryRun) }
        }
    }

    /// `POST /admin/messages/{id}/retry|cancel`.
    func changeMessage(_ request: Request, context: HeraldRequestContext, _ change: MessageChange) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such message"), "Message", context: context)
        }
        let changed: Int
        do {
            _ = try await offload { try console.messageHistory(id: id) }  // a 404 page for a row that does not exist
            changed = try await requeue(change, RequeueFilter(states: change.states, ids: [id]), dryRun: false).count
        } catch {
            return failure(error, "Message \(id)", context: context)
        }
        let done = changed == 0 ? "unchanged" : change == .retry ? "retried" : "cancelled"
        logAction("message \(done)", context: context, ["outbox_id": "\(id)"])
        return ConsolePage.redirect(to: "/admin/messages/\(id)?done=\(done)")
    }

    /// A value for a URL query.
    static func queryEscape(_ text: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+?#")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// A form field's value, or nil when it is missing or blank.
func nonEmpty(_ text: String?) -> String? {
    guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
    return text
}

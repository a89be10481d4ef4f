import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/messages`: search the outbox, one message's whole history, retry and cancel.
extension ConsoleController {
    /// The search form's fields; empty ones mean "any".
    struct MessageFields: Decodable {
        var email: String?
        var state: String?
        var action: String?
        var campaign: String?

        func search() throws -> MessageSearch {
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
            return search
        }
    }

    static let messageLimit = 200

    @Sendable func messages(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let decoded = try? request.uri.decodeQuery(as: MessageFields.self, context: context)
        let fields = decoded ?? MessageFields()
        let form = """
            <form id="message-search" class="filters" method="get" action="/admin/messages">
            <label>Email <input name="email" type="email" value="\(ConsolePage.escape(fields.email ?? ""))"></label>
            <label>State <select name="state">\(ConsolePage.options(OutboxState.allCases.map(\.rawValue), selected: fields.state))</select></label>
            <label>Action <select name="action">\(ConsolePage.options(ActionKind.allCases.map(\.rawValue), selected: fields.action))</select></label>
            <label>Campaign <input name="campaign" inputmode="numeric" size="6" value="\(ConsolePage.escape(fields.campaign ?? ""))"></label>
            <button id="search" type="submit">Search</button></form>
            """
        let rows: [OutboxMessage]
        do {
            guard decoded != nil else { throw HeraldError(.argumentError, "the search could not be read: give each field once") }
            let search = try fields.search()
            rows = try await offload { try console.searchMessages(search, limit: Self.messageLimit + 1) }
        } catch let error as HeraldError where error.code != .unavailable {
            return ConsolePage.response(
                ConsolePage.html("Messages", form + ConsolePage.error(error.description), session: context.consoleSession, current: "messages"),
                status: .badRequest)
        } catch {
            return failure(error, "Messages", context: context)
        }
        let tableRows = rows.prefix(Self.messageLimit).map { row in
            """
            <tr id="message-\(row.id)"><td><a href="/admin/messages/\(row.id)">\(row.id)</a></td><td>\(row.kind.rawValue)</td>\
            <td class="recipient">\(ConsolePage.escape(row.recipient.value))</td><td class="state">\(row.state.rawValue)</td>\
            <td>\(row.attempts)</td><td>\(ConsolePage.escape(String((row.lastReply ?? "").prefix(60))))</td>\
            <td>\(row.queuedAt.iso8601)</td><td>\(row.campaignID.map(String.init) ?? "")</td></tr>
            """
        }
        let more =
            rows.count > Self.messageLimit ? #"<p class="muted">The newest \#(Self.messageLimit) shown; narrow the search for older ones.</p>"# : ""
        let body =
            form
            + ConsolePage.table(
                id: "messages", ["ID", "Action", "Recipient", "State", "Tries", "Last reply", "Queued (UTC)", "Campaign"], tableRows,
                empty: "No messages match.") + more
        return ConsolePage.response(ConsolePage.html("Messages", body, session: context.consoleSession, current: "messages"))
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
    enum MessageChange: String, CaseIterable, Sendable { case retry, cancel }

    /// `POST /admin/messages/{id}/retry|cancel`.
    func changeMessage(_ request: Request, context: HeraldRequestContext, _ change: MessageChange) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else {
            return failure(HeraldError(.notFound, "no such message"), "Message", context: context)
        }
        let changed: [Int64]
        do {
            _ = try await offload { try console.messageHistory(id: id) }  // a 404 page for a row that does not exist
            switch change {
            case .retry:
                let filter = RequeueFilter(states: SendingService.retryableStates, ids: [id])
                changed = try await offload { try sending.retryMessages(filter, actor: "console", dryRun: false).ids }
            case .cancel:
                let filter = RequeueFilter(states: SendingService.cancellableStates, ids: [id])
                changed = try await offload { try sending.cancelMessages(filter, actor: "console", dryRun: false).ids }
            }
        } catch {
            return failure(error, "Message \(id)", context: context)
        }
        let done = changed.isEmpty ? "unchanged" : change == .retry ? "retried" : "cancelled"
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

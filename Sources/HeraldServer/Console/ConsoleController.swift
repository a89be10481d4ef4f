import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Logging

/// The browser console at `/admin`: signing in and out, and the overview. Campaigns (and creating one), messages, the audit,
/// templates, suppressions, webhooks and the action log are in the `ConsoleController+…` files. Pages are server-rendered HTML without scripts; every
/// change is a `POST` form with the session's CSRF token.
struct ConsoleController: Sendable {
    let console: ConsoleService
    let campaigns: CampaignsService
    let reports: ReportsService
    let sending: SendingService
    let feedback: FeedbackService
    let webhooks: WebhooksService
    let adminToken: AdminTokenCheck
    let sessions: ConsoleSessions
    /// Where and how large a new campaign's recipients file may be kept.
    let upload: ConsoleUpload

    init(
        configuration: HeraldConfiguration, console: ConsoleService, campaigns: CampaignsService, reports: ReportsService,
        sending: SendingService, feedback: FeedbackService, webhooks: WebhooksService, adminToken: AdminTokenCheck
    ) {
        self.console = console
        self.campaigns = campaigns
        self.reports = reports
        self.sending = sending
        self.feedback = feedback
        self.webhooks = webhooks
        self.adminToken = adminToken
        sessions = ConsoleSessions(configuration.server)
        upload = ConsoleUpload(
            directory: configuration.campaignUploadDirectory, maxFileBytes: configuration.campaigns.maxUploadBytes)
    }

    /// Routes under `/admin`.
    var routes: RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
        routes.get("sign-in", use: signInForm)
        routes.post("sign-in", use: signIn)
        let pages = routes.group().add(middleware: ConsoleAuthMiddleware(sessions: sessions, console: console))
        pages.get(use: overview)
        pages.post("sign-out", use: signOut)
        pages.get("campaigns", use: campaigns)
        pages.get("campaigns/new", use: newCampaignForm)
        pages.post("campaigns/new", use: createCampaign)
        pages.get("campaigns/:id/review", use: reviewCampaign)
        pages.get("campaigns/:id/rejects.csv", use: campaignRejects)
        for verb in CampaignChange.allCases {
            pages.post("campaigns/:id/\(verb.rawValue)") { request, context in try await changeCampaign(request, context: context, verb) }
        }
        pages.get("messages", use: messages)
        pages.get("messages/:id", use: message)
        for verb in MessageChange.allCases {
            pages.post("messages/:id/\(verb.rawValue)") { request, context in try await changeMessage(request, context: context, verb) }
        }
        pages.get("audit/search", use: auditSearch)
        pages.get("templates", use: templates)
        pages.get("templates/:action/:locale", use: template)
        pages.get("templates/:action/:locale/html", use: templateHTML)
        pages.post("templates/:action/:locale/test", use: sendTest)
        pages.post("templates/:action/:locale/preview", use: previewTemplate)
        pages.post("templates/:action/:locale/save", use: saveTemplate)
        pages.post("templates/:action/:locale/revert", use: revertTemplate)
        // Under `console/`: `/admin/suppressions` is the bearer-token JSON API; the webhooks page beside it.
        pages.get("console/suppressions", use: suppressionsPage)
        pages.post("console/suppressions/add", use: addSuppressions)
        pages.post("console/suppressions/remove", use: removeSuppression)
        pages.get("console/suppressions/export", use: exportSuppressions)
        // Under `console/`: beside `messages/{id}`, `messages/bulk` would take GETs the router answers 404, not 405.
        pages.post("console/messages/bulk", use: bulkMessages)
        pages.get("console/webhooks", use: webhooksPage)
        pages.post("console/webhooks/replay", use: replayWebhooks)
        pages.get("console/activity", use: activityPage)
        return routes
    }

    // MARK: Signing in and out

    struct SignInFields: Decodable {
        var token: String?
        var csrf: String?
    }

    @Sendable func signInForm(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        signInPage(error: nil, status: .ok)
    }

    /// The form, with a fresh CSRF value in its own cookie (double submit: only this site can read it back).
    private func signInPage(error: String?, status: HTTPResponse.Status) -> Response {
        guard sessions.isEnabled else {
            return ConsolePage.message("Console disabled", "Set server.adminToken to use the console.", status: .notFound)
        }
        let value = ConsoleSessions.randomToken()
        let token = sessions.signInToken(for: value) ?? ""
        let body = """
            \(ConsolePage.error(error))
            <form id="sign-in" method="post" action="/admin/sign-in">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(token))">
            <label>\(sessions.hasReadToken ? "Admin or read-only token" : "Admin token") <input id="token" name="token" type="password" autocomplete="current-password" required autofocus></label>
            <p><button id="sign-in-button" type="submit">Sign in</button></p></form>
            <p class="muted">The token is <code>server.adminToken</code> from Herald's configuration\(sessions.hasReadToken ? ", or <code>server.consoleReadToken</code> to look without changing anything" : "").</p>
            """
        let cookie = Self.cookie(ConsoleSessions.signInCookie, value, maxAge: 3600)
        return ConsolePage.response(
            ConsolePage.html("Sign in", body, session: nil), status: status, headers: [.setCookie: cookie.description])
    }

    @Sendable func signIn(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let form = try await ConsoleForm.read(&request, as: SignInFields.self)
        guard sessions.isEnabled else { return signInPage(error: nil, status: .notFound) }
        guard let value = request.cookies[ConsoleSessions.signInCookie]?.value, let expected = sessions.signInToken(for: value),
            let presented = form?.csrf, Secret.equal(presented, expected)
        else {
            return ConsolePage.message(
                "Refused", "The sign-in form expired or did not come from the console. Reload it and try again.", status: .forbidden)
        }
        // The read token signs in read-only; like the admin token, even from a network locked out by wrong ones.
        if sessions.isReadToken(form?.token ?? "") {
            return signedIn(sessions.issue(readOnly: true), role: "reader", context: context)
        }
        // The right token always signs in, even from a network locked out by wrong ones (`AdminTokenCheck`).
        switch adminToken.check(form?.token ?? "", clientIP: context.clientIP) {
        case .admin:
            break
        case .lockedOut:
            context.logger.notice("console sign-in locked out", metadata: ["ip": "\(context.clientIP ?? "-")"])
            return signInPage(error: "Too many wrong tokens from your network; try again later.", status: .tooManyRequests)
        case .wrong:
            context.logger.notice("console sign-in refused", metadata: ["ip": "\(context.clientIP ?? "-")"])
            return signInPage(error: "That is not the admin token.", status: .unauthorized)
        }
        return signedIn(sessions.issue(), role: "admin", context: context)
    }

    /// The session's cookie and the way to the overview.
    private func signedIn(_ session: String?, role: String, context: HeraldRequestContext) -> Response {
        guard let session else { return signInPage(error: nil, status: .notFound) }
        context.logger.info("console sign-in", metadata: ["ip": "\(context.clientIP ?? "-")", "role": "\(role)"])
        var headers = HTTPFields()
        headers.append(
            .init(name: .setCookie, value: Self.cookie(ConsoleSessions.cookie, session, maxAge: Int(ConsoleSessions.lifetime)).description))
        headers.append(.init(name: .setCookie, value: Self.cookie(ConsoleSessions.signInCookie, "", maxAge: 0).description))
        return ConsolePage.redirect(to: "/admin/", headers: headers)
    }

    @Sendable func signOut(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        ConsolePage.redirect(
            to: "/admin/sign-in", headers: [.setCookie: Self.cookie(ConsoleSessions.cookie, "", maxAge: 0).description])
    }

    /// A console cookie: HttpOnly, Secure, SameSite=Strict, limited to `/admin`.
    static func cookie(_ name: String, _ value: String, maxAge: Int) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAge, path: ConsoleSessions.path, secure: true, httpOnly: true, sameSite: .strict)
    }

    // MARK: Overview

    @Sendable func overview(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let buckets = Self.lastHourBuckets()
        let counts: [OutboxCount]
        let activity: [SendActivity]
        let status: (workers: [LiveWorker], queue: QueueStatus)
        do {
            counts = try await reports.outboxCounts()
            activity = try await offload { try console.sendActivity(since: buckets[0]) }
            status = try await offload { try console.workerStatus() }
        } catch {
            return failure(error, "Overview", context: context)
        }
        var byState: [OutboxState: Int] = [:]
        for count in counts { byState[count.state, default: 0] += count.count }
        let queueRows = OutboxState.allCases.compactMap { state in
            byState[state].map { #"<tr data-state="\#(state.rawValue)"><td>\#(state.rawValue)</td><td class="count">\#($0)</td></tr>"# }
        }
        let body = """
            \(Self.workerSection(status.workers, status.queue))
            <h2>Queue</h2>\(ConsolePage.table(id: "queue", ["State", "Messages"], queueRows, empty: "The outbox is empty."))
            <h2>Sends over the last hour</h2>\(Self.rateTable(activity, buckets))
            <h2>Failures over the last hour, by reply class</h2>\(Self.failureTable(activity))
            """
        return ConsolePage.response(
            ConsolePage.html("Overview", body, session: context.consoleSession, current: "overview", refresh: (30, "/admin/")))
    }

    /// Whether anything sends what waits: the workers by heartbeat, and how late the next due message is.
    static func workerSection(_ workers: [LiveWorker], _ queue: QueueStatus) -> String {
        let now = Date()
        let rows = workers.map { worker in
            let state = worker.alive ? "alive" : "silent"
            return """
                <tr data-worker="\(state)"><td>\(ConsolePage.escape(worker.host))</td><td>\(worker.pid)</td>\
                <td>\(worker.startedAt.iso8601)</td><td>\(Int(now.timeIntervalSince(worker.heartbeatAt)))s ago</td>\
                <td class="state">\(state)</td></tr>
                """
        }
        let late =
            queue.nextDue.map { due -> String in
                let lateness = Int(now.timeIntervalSince(due))
                return lateness > 60 ? " The next due message has waited \(lateness)s." : ""
            } ?? ""
        let warning =
            LiveWorker.obstacle(workers, pending: queue.pending).map { obstacle in
                ConsolePage.error("\(queue.pending) message(s) wait and \(obstacle).")
            } ?? ""
        return """
            <h2>Workers</h2>\(warning)\(ConsolePage.table(id: "workers", ["Host", "PID", "Started (UTC)", "Heartbeat", "State"], rows, empty: "No worker is registered."))
            <p class="muted" id="pending">\(queue.pending) waiting or being sent.\(late)</p>
            """
    }

    /// The starts of the twelve five-minute buckets ending with the current one, oldest first: the rate table's
    /// rows, and the failures table's window.
    static func lastHourBuckets(now: Date = Date()) -> [Date] {
        let width = SendActivity.bucketSeconds
        let last = (now.timeIntervalSince1970 / width).rounded(.down) * width
        return (0..<12).reversed().map { back in Date(timeIntervalSince1970: last - Double(back) * width) }
    }

    /// One row per five-minute bucket, oldest first.
    static func rateTable(_ activity: [SendActivity], _ buckets: [Date]) -> String {
        let rows = buckets.map { start -> String in
            let bucket = activity.filter { $0.bucket == start }
            func sum(_ outcomes: Set<String>) -> Int { bucket.filter { outcomes.contains($0.outcome) }.reduce(0) { $0 + $1.count } }
            let time = start.formatted(Date.ISO8601FormatStyle().time(includingFractionalSeconds: false))
            return "<tr><td class=\"time\">\(time)</td><td class=\"sent\">\(sum(["sent"]))</td>"
                + "<td class=\"deferred\">\(sum(["deferred", "connection", "interrupted"]))</td>"
                + "<td class=\"possibly-delivered\">\(sum([OutboxState.possiblyDelivered.rawValue]))</td>"
                + "<td class=\"failed\">\(sum(["failed", "dead"]))</td></tr>"
        }
        return ConsolePage.table(id: "send-rate", ["From (UTC)", "Sent", "Deferred", "Possibly delivered", "Failed"], rows)
    }

    /// Attempts that did not end in `sent`, by reply class.
    static func failureTable(_ activity: [SendActivity]) -> String {
        var byClass: [String: Int] = [:]
        for entry in activity where entry.outcome != "sent" { byClass[entry.replyClass, default: 0] += entry.count }
        let rows = byClass.sorted { $0.key < $1.key }.map { replyClass, count in
            #"<tr data-class="\#(ConsolePage.escape(replyClass))"><td>\#(ConsolePage.escape(replyClass))</td><td class="count">\#(count)</td></tr>"#
        }
        let none = #"<tr><td colspan="2" class="muted">No failures in the last hour.</td></tr>"#
        return ConsolePage.table(id: "failures", ["Reply class", "Attempts"], rows.isEmpty ? [none] : rows)
    }

    // MARK: Shared

    /// Logs a console change with who made it (`Session.actor`: the role and the session) and from where.
    /// Logs a change made in the console with its actor and client address, and notes it for the ledger's action log
    /// (`ConsoleActionNotes`). `target` defaults to the campaign or message `metadata` names; the rest of `metadata`
    /// is the entry's detail. Never pass a token, a code or a password.
    func logAction(
        _ what: String, target: String? = nil, result: ConsoleAction.Result = .ok, context: HeraldRequestContext,
        _ metadata: Logger.Metadata = [:]
    ) {
        var logged = metadata
        logged["actor"] = "\(context.consoleSession?.actor ?? "console")"
        logged["ip"] = "\(context.clientIP ?? "-")"
        context.logger.notice("console: \(what)", metadata: logged)
        var rest = metadata
        let named = [("campaign", "campaign"), ("outbox_id", "message")].first { key, _ in rest[key] != nil }
        let target = target ?? named.flatMap { key, noun in rest.removeValue(forKey: key).map { "\(noun) \($0)" } }
        let detail = rest.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        ConsoleActionNotes.current?.add(.init(action: what, target: target, detail: detail.isEmpty ? nil : detail, result: result))
    }

    /// An error page for a failed console action: the message of a `HeraldError` the operator can act on.
    func failure(_ error: any Error, _ title: String, context: HeraldRequestContext) -> Response {
        let (status, text): (HTTPResponse.Status, String)
        switch error {
        case let error as HeraldError where error.code == .notFound: (status, text) = (.notFound, error.detail)
        case let error as HeraldError where error.code == .unavailable:
            (status, text) = (.serviceUnavailable, "The ledger is busy; try again shortly. (\(error.detail))")
        case let error as HeraldError: (status, text) = (.badRequest, error.description)
        default:
            context.logger.error("console: \(title) failed", metadata: ["error": "\(error)"])
            (status, text) = (.internalServerError, "Something went wrong; the log has the details.")
        }
        return ConsolePage.response(ConsolePage.html(title, ConsolePage.error(text), session: context.consoleSession), status: status)
    }
}

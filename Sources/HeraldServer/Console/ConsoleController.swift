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
    /// The admin API's bearer token, for the pages it may read (`ConsoleAuthMiddleware.apiReadable`).
    let api: AdminCredential
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
        api = AdminCredential(configuration.server, check: adminToken)
        upload = ConsoleUpload(
            directory: configuration.campaignUploadDirectory, maxFileBytes: configuration.campaigns.maxUploadBytes)
    }

    /// Routes under `/admin`.
    var routes: RouteCollection<HeraldRequestContext> {
        let routes = RouteCollection(context: HeraldRequestContext.self)
        routes.get("sign-in", use: signInForm)
        routes.post("sign-in", use: signIn)
        let pages = routes.group().add(middleware: ConsoleAuthMiddleware(sessions: sessions, console: console, api: api))
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
        let window = request.uri.queryParameters["window"].flatMap { ConsoleOverview.Window(rawValue: String($0)) } ?? .hour
        let counts: [OutboxCount]
        let overview: ConsoleOverview
        let hooks: [WebhookEndpointReport]
        do {
            counts = try await reports.outboxCounts()
            overview = try await offload { try console.overview(window) }
            hooks = try await offload { try webhooks.webhookReports() }
        } catch {
            return failure(error, "Overview", context: context)
        }
        var byState: [OutboxState: Int] = [:]
        for count in counts { byState[count.state, default: 0] += count.count }
        let queueRows = OutboxState.allCases.compactMap { state in
            byState[state].map { #"<tr data-state="\#(state.rawValue)"><td>\#(state.rawValue)</td><td class="count">\#($0)</td></tr>"# }
        }
        let span = window == .hour ? "the last hour" : "the last 24 hours"
        let switcher = ConsoleOverview.Window.allCases.map { other in
            other == window
                ? #"<strong>\#(other == .hour ? "Last hour" : "Last 24 hours")</strong>"#
                : #"<a href="/admin/?window=\#(other.rawValue)">\#(other == .hour ? "Last hour" : "Last 24 hours")</a>"#
        }
        let body = """
            \(Self.workerSection(overview.workers, overview.queue))
            <h2>Health</h2>\(Self.healthTable(overview, hooks))
            <p class="window" id="window">\(switcher.joined(separator: " · "))</p>
            <h2>Sends over \(span)</h2>\(Self.sendChart(overview))\(Self.rateTable(overview.sends, overview.buckets))
            <h2>Clicks and redemptions over \(span)</h2>\(Self.linkChart(overview))
            <h2>Queue</h2>\(Self.queueChart(byState))\(ConsolePage.table(id: "queue", ["State", "Messages"], queueRows, empty: "The outbox is empty."))
            <h2>Failures over \(span), by reply class</h2>\(Self.failureTable(overview.sends))
            """
        let refresh = window == .hour ? "/admin/" : "/admin/?window=\(window.rawValue)"
        return ConsolePage.response(
            ConsolePage.html(
                "Overview", body, session: context.consoleSession, current: "overview", refresh: (30, refresh), style: ConsoleChart.style))
    }

    /// The relay, the webhooks and the window's bounce and complaint rates, each with whether it needs a look.
    static func healthTable(_ overview: ConsoleOverview, _ hooks: [WebhookEndpointReport]) -> String {
        func row(_ key: String, _ name: String, _ text: String, warn: Bool) -> String {
            #"<tr data-health="\#(key)"><th>\#(name)</th><td class="\#(warn ? "warn" : "ok")">\#(ConsolePage.escape(text))</td></tr>"#
        }
        let relay: (String, Bool) =
            switch overview.relay {
            case .idle: ("idle: nothing tried in the last five minutes", false)
            case .ok(let sent): ("ok: \(sent) sent in the last five minutes", false)
            case .degraded(let failed, let attempts):
                ("degraded: \(failed) of \(attempts) attempts in the last five minutes deferred or cut off", true)
            case .failing(let why): ("failing: \(why)", true)
            }
        let backlog = hooks.reduce(0) { $0 + $1.queued }
        let dead = hooks.reduce(0) { $0 + $1.dead }
        let failing = hooks.filter { $0.lastError != nil && ($0.lastErrorAt ?? .distantPast) > ($0.lastDeliveredAt ?? .distantPast) }
        let webhooks =
            hooks.isEmpty
            ? ("none configured", false)
            : (
                "\(hooks.count) endpoint(s), \(backlog) queued, \(dead) dead"
                    + (failing.isEmpty ? "" : "; failing: " + failing.map(\.endpoint).joined(separator: ", ")),
                !failing.isEmpty || dead > 0
            )
        func rate(_ value: Double?, _ count: Int, warning: Double) -> (String, Bool) {
            guard let value else { return ("\(count) (nothing sent in the window)", false) }
            return (String(format: "%.2f %%", value * 100) + " (\(count) of \(overview.sent) sent)", value >= warning)
        }
        let bounces = (overview.feedback[.hard] ?? 0) + (overview.feedback[.soft] ?? 0)
        let bounce = rate(overview.bounceRate, bounces, warning: ConsoleOverview.bounceWarning)
        let complaint = rate(overview.complaintRate, overview.feedback[.complaint] ?? 0, warning: ConsoleOverview.complaintWarning)
        let rows = [
            row("relay", "SMTP relay", relay.0, warn: relay.1),
            row("webhooks", #"Webhooks"#, webhooks.0, warn: webhooks.1),
            row("bounces", "Bounce rate", bounce.0, warn: bounce.1),
            row("complaints", "Complaint rate", complaint.0, warn: complaint.1),
        ]
        return #"<table id="health" class="health">\#(rows.joined())</table>"#
    }

    static func bucketLabel(_ start: Date) -> String {
        start.formatted(Date.ISO8601FormatStyle().time(includingFractionalSeconds: false)).prefix(5).description
    }

    /// Sent, deferred, possibly delivered and failed attempts per bucket.
    static func sendChart(_ overview: ConsoleOverview) -> String {
        func values(_ outcomes: Set<String>) -> [Int] {
            overview.buckets.map { start in
                overview.sends.filter { $0.bucket == start && outcomes.contains($0.outcome) }.reduce(0) { $0 + $1.count }
            }
        }
        return ConsoleChart.bars(
            id: "send-chart", title: "Delivery attempts per bucket", labels: overview.buckets.map(bucketLabel),
            series: [
                .init(name: "Sent", key: "sent", color: "#16a34a", values: values(["sent"])),
                .init(name: "Deferred", key: "deferred", color: "#f59e0b", values: values(["deferred", "connection", "interrupted"])),
                .init(
                    name: "Possibly delivered", key: "possibly-delivered", color: "#8b5cf6",
                    values: values([OutboxState.possiblyDelivered.rawValue])),
                .init(name: "Failed", key: "failed", color: "#dc2626", values: values(["failed", "dead"])),
            ])
    }

    /// Link clicks and redemptions per bucket.
    static func linkChart(_ overview: ConsoleOverview) -> String {
        func values(_ kind: String) -> [Int] {
            overview.buckets.map { start in overview.links.filter { $0.bucket == start && $0.kind == kind }.reduce(0) { $0 + $1.count } }
        }
        return ConsoleChart.bars(
            id: "link-chart", title: "Link clicks and redemptions per bucket", labels: overview.buckets.map(bucketLabel),
            series: [
                .init(name: "Clicked", key: "click", color: "#2563eb", values: values("click")),
                .init(name: "Redeemed", key: "redeemed", color: "#0d9488", values: values("redeemed")),
            ])
    }

    /// The queue now: one bar per state that holds rows.
    static func queueChart(_ byState: [OutboxState: Int]) -> String {
        let states = OutboxState.allCases.filter { (byState[$0] ?? 0) > 0 }
        guard !states.isEmpty else { return "" }
        let colors: [OutboxState: String] = [
            .queued: "#2563eb", .sending: "#0ea5e9", .deferred: "#f59e0b", .sent: "#16a34a", .failed: "#dc2626", .dead: "#7f1d1d",
        ]
        return ConsoleChart.bars(
            id: "queue-chart", title: "Messages per state", labels: states.map(\.rawValue),
            series: states.map { state in
                ConsoleChart.Series(
                    name: state.rawValue, key: state.rawValue, color: colors[state] ?? "#6b7280",
                    values: states.map { $0 == state ? byState[state] ?? 0 : 0 })
            })
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

    /// One row per bucket, oldest first.
    static func rateTable(_ activity: [SendActivity], _ buckets: [Date]) -> String {
        let rows = buckets.map { start -> String in
            let bucket = activity.filter { $0.bucket == start }
            func sum(_ outcomes: Set<String>) -> Int { bucket.filter { outcomes.contains($0.outcome) }.reduce(0) { $0 + $1.count } }
            let time = bucketLabel(start)
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
        let none = #"<tr><td colspan="2" class="muted">No failures in the window.</td></tr>"#
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

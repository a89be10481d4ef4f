import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/console/webhooks`: each endpoint with its backlog as `herald webhooks list` has it, the latest failed
/// deliveries with the endpoint's answer, and replays as `herald webhooks replay` does them.
extension ConsoleController {
    static let webhooksPath = "/admin/console/webhooks"
    static let webhookFailureLimit = 50

    /// The replay form's fields: an empty endpoint is every endpoint; the state defaults to `dead`, `any` is every state.
    struct WebhookReplayFields: Decodable {
        var endpoint: String?
        var state: String?
        var id: String?

        func filter() throws -> WebhookReplayFilter {
            var filter = WebhookReplayFilter(endpoint: nonEmpty(endpoint))
            switch nonEmpty(state) ?? WebhookDeliveryState.dead.rawValue {
            case "any": break
            case let text:
                guard let state = WebhookDeliveryState(rawValue: text) else {
                    throw HeraldError(.argumentError, "unknown state '\(text)'; expected queued, delivered, dead or any")
                }
                filter.state = state
            }
            if let text = nonEmpty(id) {
                guard let id = Int64(text) else { throw HeraldError(.argumentError, "the delivery id must be a number") }
                filter.id = id
            }
            return filter
        }
    }

    @Sendable func webhooksPage(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let reports: [WebhookEndpointReport]
        let failures: [WebhookFailure]
        do {
            reports = try await offload { try webhooks.webhookReports() }
            failures = try await offload { try webhooks.recentWebhookFailures(limit: Self.webhookFailureLimit) }
        } catch {
            return failure(error, "Webhooks", context: context)
        }
        let csrf = context.consoleSession?.csrf ?? ""
        let now = Date()
        func replay(_ fields: [String: String], _ label: String) -> String {
            ConsolePage.form(action: "\(Self.webhooksPath)/replay", csrf: csrf, fields: fields, button: label, buttonClass: "replay")
        }
        let rows = reports.map { report -> String in
            let events = report.events.count == WebhookEvent.allCases.count ? "all" : report.events.joined(separator: ", ")
            let oldest = report.oldestQueuedAt.map { "\($0.iso8601) (\(Self.age(now.timeIntervalSince($0))) ago)" } ?? ""
            let error = report.lastError.map { "\(report.lastErrorAt.map(\.iso8601) ?? "-"): \($0)" } ?? ""
            let button = report.dead > 0 ? replay(["endpoint": report.endpoint, "state": "dead"], "Replay \(report.dead) dead") : ""
            return """
                <tr data-endpoint="\(ConsolePage.escape(report.endpoint))"><td class="endpoint">\(ConsolePage.escape(report.endpoint))</td>\
                <td class="url">\(ConsolePage.escape(report.url ?? "not configured: nothing posts its deliveries"))</td>\
                <td>\(ConsolePage.escape(events))</td><td class="queued">\(report.queued)</td><td class="delivered">\(report.delivered)</td>\
                <td class="dead">\(report.dead)</td><td>\(oldest)</td><td>\(report.lastDeliveredAt?.iso8601 ?? "")</td>\
                <td class="last-error">\(ConsolePage.escape(error))</td><td>\(button)</td></tr>
                """
        }
        // A backlog behind an endpoint whose last POST failed: what an operator must see first.
        let warnings = reports.compactMap { report -> String? in
            guard report.queued > 0, let error = report.lastError, let at = report.lastErrorAt,
                report.lastDeliveredAt.map({ $0 < at }) ?? true
            else { return nil }
            return #"<p class="error" data-endpoint="\#(ConsolePage.escape(report.endpoint))">"#
                + ConsolePage.escape("\(report.endpoint): \(report.queued) deliveries wait; its last POST failed (\(error)).") + "</p>"
        }
        let failureRows = failures.map { failure in
            """
            <tr id="delivery-\(failure.id)" data-endpoint="\(ConsolePage.escape(failure.endpoint))"><td>\(failure.id)</td>\
            <td>\(ConsolePage.escape(failure.endpoint))</td><td>\(ConsolePage.escape(failure.event))</td>\
            <td class="state">\(failure.state.rawValue)</td><td>\(failure.attempts)</td>\
            <td class="status">\(failure.lastStatus.map(String.init) ?? "-")</td><td class="answer">\(ConsolePage.escape(failure.lastError))</td>\
            <td>\(failure.lastAttemptAt?.iso8601 ?? "")</td>\
            <td>\(replay(["id": "\(failure.id)", "state": "any"], "Replay"))</td></tr>
            """
        }
        let endpointOptions = ConsolePage.options(reports.map(\.endpoint), selected: nil)
        let stateOptions = (["dead", "queued", "delivered", "any"]).map { #"<option value="\#($0)">\#($0)</option>"# }.joined()
        let replayForm = ConsolePage.changing(
            """
            <form id="webhook-replay" class="filters" method="post" action="\(Self.webhooksPath)/replay">
            <input type="hidden" name="csrf" value="\(ConsolePage.escape(csrf))">
            <label>Endpoint <select name="endpoint">\(endpointOptions)</select></label>
            <label>State <select name="state">\(stateOptions)</select></label>
            <button id="webhook-replay-button" type="submit">Replay</button></form>
            <p class="muted">A replay queues the deliveries again, due now, with a fresh attempt budget; the worker posts them. \
            Receivers see the same event id again (<code>Herald-Event-Id</code>).</p>
            """)
        let done =
            request.uri.queryParameters["done"] == "replayed"
            ? request.uri.queryParameters["count"].flatMap { Int(String($0)) }.map { "\($0) deliver\($0 == 1 ? "y" : "ies") queued again." }
            : nil
        let body = """
            \(ConsolePage.notice(done))\(warnings.joined())
            <h2>Endpoints</h2>\(ConsolePage.table(
                id: "webhooks", ["Endpoint", "URL", "Events", "Queued", "Delivered", "Dead", "Oldest queued (UTC)", "Last delivered", "Last error", ""],
                rows, empty: "No webhook endpoints configured (webhooks.<name> in the configuration)."))
            <h2>Recent failures</h2>\(ConsolePage.table(
                id: "webhook-failures", ["Delivery", "Endpoint", "Event", "State", "Tries", "Status", "Answer", "Last try (UTC)", ""],
                failureRows, empty: "No delivery is failing."))
            <p class="muted">The latest \(Self.webhookFailureLimit) deliveries whose last POST failed and that are not delivered.</p>
            \(replayForm.isEmpty ? "" : "<h2>Replay</h2>")\(replayForm)
            """
        return ConsolePage.response(ConsolePage.html("Webhooks", body, session: context.consoleSession, current: "webhooks"))
    }

    /// `POST /admin/console/webhooks/replay`.
    @Sendable func replayWebhooks(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        var request = request
        let fields = try await ConsoleForm.read(&request, as: WebhookReplayFields.self) ?? WebhookReplayFields()
        let count: Int
        do {
            let filter = try fields.filter()
            count = try await offload { try webhooks.replayWebhooks(filter) }
        } catch {
            return failure(error, "Webhooks", context: context)
        }
        let target = nonEmpty(fields.id).map { "delivery \($0)" } ?? nonEmpty(fields.endpoint) ?? "every endpoint"
        logAction(
            "webhook deliveries replayed", target: target, context: context, ["count": "\(count)", "state": "\(nonEmpty(fields.state) ?? "dead")"])
        return ConsolePage.redirect(to: "\(Self.webhooksPath)?done=replayed&count=\(count)")
    }

    /// "45s", "12m", "3h", "2d".
    static func age(_ seconds: TimeInterval) -> String {
        let s = max(0, Int(seconds))
        return s < 120 ? "\(s)s" : s < 7200 ? "\(s / 60)m" : s < 172_800 ? "\(s / 3600)h" : "\(s / 86400)d"
    }
}

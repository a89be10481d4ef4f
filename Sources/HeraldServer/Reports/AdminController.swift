import Foundation
import HeraldActions
import HeraldCore
import Hummingbird
import Logging

/// The administrator's pages and calls: a campaign's HTML report, the audit as JSON lines, and retrying or
/// cancelling outbox rows.
struct AdminController: Sendable {
    let configuration: HeraldConfiguration
    let sending: SendingService
    let reports: ReportsService
    let adminToken: AdminTokenCheck

    var routes: RouteCollection<HeraldRequestContext> {
        // The console links to the report and the audit exports: its session cookie may read them.
        RouteCollection.adminOnly(configuration, check: adminToken, consoleReads: true)
            .get("campaigns/:id", use: campaignReport)
            .get("audit", use: audit)
            .post("messages:retry", use: retry)
            .post("messages:cancel", use: cancel)
    }

    /// The body of `POST /admin/messages:retry` and `:cancel`: the filters of `herald messages retry|cancel`.
    struct RequeueBody: Decodable, Sendable {
        var states: [String]?
        var campaign: Int64?
        var email: String?
        /// ISO 8601.
        var since: String?
        /// Every matching row: needed when no campaign, email or since narrows the change.
        var all: Bool?
        var dryRun: Bool?

        func filter() throws -> RequeueFilter {
            let states = try (states ?? []).map { value in
                guard let state = OutboxState(rawValue: value) else { throw HeraldError(.invalidArgument, "unknown state '\(value)'") }
                return state
            }
            let since = try since.map { text in
                guard let date = try? Date(text, strategy: .iso8601) else {
                    throw HeraldError(.invalidArgument, "since must be an ISO 8601 time")
                }
                return date
            }
            let email = try email.map { try EmailAddress($0) }
            return RequeueFilter(states: Set(states), campaign: campaign, email: email, since: since, all: all ?? false)
        }
    }

    /// What a retry or cancel matched: how many, and their ids (the first 1,000).
    struct RequeueReply: Encodable, Sendable {
        let count: Int
        let ids: [String]
        let dryRun: Bool

        init(_ result: RequeueResult) {
            count = result.count
            ids = result.ids.map(String.init)
            dryRun = result.dryRun
        }
    }

    /// `POST /admin/messages:retry`: failed and dead rows (or those of `states`) back in the queue.
    @Sendable func retry(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let body = try await request.decode(as: RequeueBody.self, context: context)
        let filter = try body.filter()
        let result = try await offload { try sending.retryMessages(filter, actor: "admin-api", dryRun: body.dryRun ?? false) }
        return try FirebaseJSONEncoder.response(RequeueReply(result))
    }

    /// `POST /admin/messages:cancel`: queued and deferred rows cancelled before they go.
    @Sendable func cancel(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let body = try await request.decode(as: RequeueBody.self, context: context)
        let filter = try body.filter()
        let result = try await offload { try sending.cancelMessages(filter, actor: "admin-api", dryRun: body.dryRun ?? false) }
        return try FirebaseJSONEncoder.response(RequeueReply(result))
    }

    /// `GET /admin/campaigns/{id}`: the campaign's report. As JSON (`herald campaigns report --format json`) for
    /// `Accept: application/json`; inside the console's layout for the console's session; else a standalone HTML page.
    @Sendable func campaignReport(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else { throw FirebaseError.notFound }
        let report: CampaignReport
        do {
            report = try await offload { try reports.report(campaign: id) }
        } catch let error as HeraldError where error.code == .notFound {
            throw FirebaseError.notFound
        }
        if (request.headers[.accept] ?? "").contains("application/json") {
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: ReportFormatter.json(report))))
        }
        if let session = context.consoleSession {
            let body = #"<p><a id="back" href="/admin/campaigns">← Campaigns</a></p>"# + ReportFormatter.htmlBody(report)
            let title = "Campaign \(id): \(report.campaign.name)"
            return ConsolePage.response(
                ConsolePage.html(title, body, session: session, current: "campaigns", style: ReportFormatter.htmlStyle))
        }
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: ReportFormatter.html(report))))
    }

    /// `GET /admin/audit?…`: the links matching the query, streamed as JSON lines.
    @Sendable func audit(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let query = try? request.uri.decodeQuery(as: AuditQuery.self, context: context) else {
            throw HeraldError(.invalidArgument, "malformed query")
        }
        return AuditStream.response(try query.filter(), format: try query.exportFormat(), reports: reports, logger: context.logger)
    }
}

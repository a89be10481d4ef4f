import HeraldActions
import HeraldCore
import Hummingbird
import Logging

/// The administrator's pages: a campaign's HTML report and the audit as JSON lines.
struct AdminController: Sendable {
    let actions: Actions

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection(context: HeraldRequestContext.self)
            .add(middleware: FirebaseErrorMiddleware())
            .add(middleware: AdminOnlyMiddleware(admin: AdminCredential(actions.configuration.server)))
            .get("campaigns/:id", use: campaignReport)
            .get("audit", use: audit)
    }

    /// `GET /admin/campaigns/{id}`: the campaign's report as a standalone HTML page.
    @Sendable func campaignReport(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: Int64.self) else { throw FirebaseError.notFound }
        let actions = actions
        let html: String
        do {
            html = try await offload { ReportFormatter.html(try actions.report(campaign: id)) }
        } catch let error as HeraldError where error.code == .notFound {
            throw FirebaseError.notFound
        }
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// `GET /admin/audit?…`: the links matching the query, streamed as JSON lines.
    @Sendable func audit(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let query = try? request.uri.decodeQuery(as: AuditQuery.self, context: context) else {
            throw HeraldError(.invalidArgument, "malformed query")
        }
        return AuditStream.response(try query.filter(), actions: actions, logger: context.logger)
    }
}

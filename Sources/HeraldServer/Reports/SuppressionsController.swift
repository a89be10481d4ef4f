import Foundation
import HeraldActions
import HeraldCore
import Hummingbird

/// `/admin/suppressions`: the suppression list under the admin token, as `herald suppressions` has it.
///
/// `GET /admin/suppressions?reason=&after=&limit=` lists a page in address order (`next` is the `after` of the
/// following page), `?format=csv` the whole list as `herald suppressions export` writes it; `POST` with
/// `{"emails":[…],"reason":…,"scope":…,"detail":…}` adds, and with a `text/csv` body imports (the good lines are
/// added, the others listed in `rejectedLines`); `GET` and `DELETE` `/admin/suppressions/{email}` read and remove one.
struct SuppressionsController: Sendable {
    let configuration: HeraldConfiguration
    let feedback: FeedbackService
    let adminToken: AdminTokenCheck

    var routes: RouteCollection<HeraldRequestContext> {
        RouteCollection.adminOnly(configuration, check: adminToken)
            .get("suppressions", use: list)
            .post("suppressions", use: add)
            .get("suppressions/:email", use: show)
            .delete("suppressions/:email", use: remove)
    }

    /// One entry as the API writes it.
    struct Entry: Encodable, Sendable {
        let email: String
        let reason: String
        let scope: String
        let detail: String?
        let outboxId: String?
        let createdAt: String

        init(_ suppression: Suppression) {
            email = suppression.email
            reason = suppression.reason.rawValue
            scope = suppression.scope.rawValue
            detail = suppression.detail
            outboxId = suppression.outboxID.map(String.init)
            createdAt = suppression.createdAt.iso8601
        }
    }

    struct Page: Encodable, Sendable {
        let suppressions: [Entry]
        let next: String?
    }

    struct Query: Decodable, Sendable {
        var reason: String?
        var after: String?
        var limit: Int?
        var format: String?
    }

    struct AddBody: Decodable, Sendable {
        var emails: [String]
        var reason: String?
        var scope: String?
        var detail: String?
    }

    struct Added: Encodable, Sendable {
        let added: Int
        let alreadySuppressed: Int
        var rejectedLines: [String]? = nil
    }

    struct Removed: Encodable, Sendable {
        let removed: Bool
    }

    @Sendable func list(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let query = try? request.uri.decodeQuery(as: Query.self, context: context) else {
            throw HeraldError(.invalidArgument, "malformed query")
        }
        let reason = try query.reason.map(Self.reason)
        if query.format == "csv" { return Self.csv(feedback: feedback, reason: reason) }
        guard query.format == nil || query.format == "json" else { throw HeraldError(.invalidArgument, "format must be json or csv") }
        let limit = query.limit ?? 1000
        guard (1...10_000).contains(limit) else { throw HeraldError(.invalidArgument, "limit must be 1 to 10000") }
        let page = try await offload { try feedback.suppressions(reason: reason, after: query.after, limit: limit) }
        return try FirebaseJSONEncoder.response(
            Page(suppressions: page.map(Entry.init), next: page.count == limit ? page.last?.email : nil))
    }

    @Sendable func add(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        if request.headers[.contentType]?.lowercased().hasPrefix("text/csv") == true { return try await importCSV(request) }
        let body = try await request.decode(as: AddBody.self, context: context)
        guard !body.emails.isEmpty, body.emails.count <= 10_000 else {
            throw HeraldError(.invalidArgument, "emails must list 1 to 10000 addresses")
        }
        let reason = try body.reason.map(Self.reason) ?? .manual
        let scope = try body.scope.map { text in
            guard let scope = Suppression.Scope(rawValue: text) else {
                throw HeraldError(.invalidArgument, "scope must be all or campaigns")
            }
            return scope
        }
        let added = try await offload { try feedback.suppress(emails: body.emails, reason: reason, scope: scope, detail: body.detail) }
        return try FirebaseJSONEncoder.response(Added(added: added, alreadySuppressed: Set(body.emails.map { $0.lowercased() }).count - added))
    }

    @Sendable func show(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let email = try Self.email(context)
        guard let entry = try await offload({ try feedback.suppression(email: email) }) else { throw FirebaseError.notFound }
        return try FirebaseJSONEncoder.response(Entry(entry))
    }

    @Sendable func remove(_ request: Request, context: HeraldRequestContext) async throws -> Response {
        let email = try Self.email(context)
        guard try await offload({ try feedback.unsuppress(email: email) }) else { throw FirebaseError.notFound }
        return try FirebaseJSONEncoder.response(Removed(removed: true))
    }

    /// A `text/csv` body in export's form (`email` column; reason, scope, detail optional).
    private func importCSV(_ request: Request) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 16 << 20)
        let (entries, problems) = SuppressionCSV.parse(String(buffer: body), defaultReason: .manual)
        let added = try await offload { try feedback.suppress(entries) }
        let result = Added(added: added, alreadySuppressed: entries.count - added, rejectedLines: problems.isEmpty ? nil : problems)
        return try FirebaseJSONEncoder.response(result)
    }

    /// The whole list as CSV, read a page at a time on a producer thread, in bounded memory.
    static func csv(feedback: FeedbackService, reason: Suppression.Reason?) -> Response {
        let (chunks, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(4))
        DispatchQueue.global().async {
            /// Waits while the client is behind; false when it has gone away.
            func send(_ text: String) -> Bool {
                let chunk = ByteBuffer(string: text)
                while true {
                    switch continuation.yield(chunk) {
                    case .dropped: Thread.sleep(forTimeInterval: 0.005)
                    case .terminated: return false
                    default: return true
                    }
                }
            }
            var after: String?
            var more = send(SuppressionCSV.header + "\n")
            while more {
                do {
                    let page = try feedback.suppressions(reason: reason, after: after, limit: 10_000)
                    more = send(page.map { SuppressionCSV.line($0) + "\n" }.joined()) && page.count == 10_000
                    after = page.last?.email
                } catch {
                    // The status is sent already: say so in the body rather than end as if complete.
                    _ = send("# export incomplete: \(error)\n")
                    more = false
                }
            }
            continuation.finish()
        }
        return Response(
            status: .ok, headers: [.contentType: "text/csv; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(asyncSequence: chunks))
    }

    private static func email(_ context: HeraldRequestContext) throws -> String {
        guard let raw = context.parameters.get("email"), let email = raw.removingPercentEncoding else { throw FirebaseError.notFound }
        return email
    }

    private static func reason(_ text: String) throws -> Suppression.Reason {
        guard let reason = Suppression.Reason(rawValue: text) else {
            throw HeraldError(
                .invalidArgument, "reason must be one of \(Suppression.Reason.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return reason
    }
}

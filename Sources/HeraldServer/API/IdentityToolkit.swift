import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

/// The Identity Toolkit v1 surface for email actions, under `/v1/…`,
/// `/identitytoolkit.googleapis.com/v1/…` and their `projects/{project}/` forms.
struct IdentityToolkit: Sendable {
    let context: ServerContext

    /// Who is calling: an app with the API key, or an administrator.
    enum Caller { case app, admin }

    /// One call's inputs.
    struct Call {
        let method: String
        let caller: Caller
        let body: Data
        let locale: String?
        let visitor: Visitor
    }

    func handle(_ request: Request, _ requestContext: HeraldRequestContext) async -> Response {
        do {
            guard let (project, method) = Self.route(request.uri.path) else { return FirebaseError.notFound.response }
            if let project, project != context.configuration.project.id {
                return FirebaseError(status: .notFound, message: "PROJECT_NOT_FOUND", reason: "notFound", statusName: "NOT_FOUND").response
            }
            let caller = try authorize(request, requestContext)
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: context.configuration.server.maxBodyBytes)
            } catch {
                throw HeraldError(.invalidArgument, "the request body is larger than \(context.configuration.server.maxBodyBytes) bytes")
            }
            let call = Call(
                method: method, caller: caller, body: Data(buffer: body), locale: request.headers[.init("X-Firebase-Locale")!],
                visitor: Visitor(ip: requestContext.remoteIP, userAgent: request.headers[.userAgent]))
            let toolkit = self
            return JSONResponse.make(try await offload { JSONResponse.data(try toolkit.dispatch(call)) })
        } catch let error as FirebaseError {
            return error.response
        } catch let error as HeraldError {
            return FirebaseError(error).response
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(error)"])
            return FirebaseError(status: .internalServerError, message: "INTERNAL_ERROR", reason: "backendError", statusName: "INTERNAL").response
        }
    }

    /// `(project, method)` for a path such as `/identitytoolkit.googleapis.com/v1/projects/p/accounts:lookup`.
    static func route(_ path: String) -> (String?, String)? {
        var rest = Substring(path)
        if rest.hasPrefix("/identitytoolkit.googleapis.com") { rest = rest.dropFirst("/identitytoolkit.googleapis.com".count) }
        guard rest.hasPrefix("/v1/") else { return nil }
        rest = rest.dropFirst(4)
        var project: String?
        if rest.hasPrefix("projects/") {
            let parts = rest.dropFirst("projects/".count).split(separator: "/", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            project = String(parts[0])
            rest = parts[1]
        }
        if rest == "accounts" { return (project, "create") }
        guard rest.hasPrefix("accounts:") else { return nil }
        return (project, String(rest.dropFirst("accounts:".count)))
    }

    /// An admin bearer token, or the API key; `Bearer owner` only when allowed and from loopback.
    func authorize(_ request: Request, _ requestContext: HeraldRequestContext) throws -> Caller {
        if request.headers[.authorization] != nil {
            guard context.isAdmin(request, requestContext) else { throw FirebaseError.unauthenticated }
            return .admin
        }
        let key =
            URLComponents(string: request.uri.description)?.queryItems?.first { $0.name == "key" }?.value
            ?? request.headers[.init("x-goog-api-key")!]
        guard let key, !key.isEmpty else { throw FirebaseError.missingAPIKey }
        guard Secret.equal(key, context.configuration.project.apiKey) else { throw FirebaseError.invalidAPIKey }
        return .app
    }

    func dispatch(_ call: Call) throws -> [String: Any] {
        switch call.method {
        case "sendOobCode": return try sendOobCode(call)
        case "signInWithEmailLink": return try signInWithEmailLink(call)
        case "resetPassword": return try resetPassword(call)
        case "update": return try update(call)
        case "createAuthUri": return try createAuthUri(call)
        case "lookup": return try lookup(call)
        case "signUp": return try signUp(call, admin: false)
        case "create": return try signUp(call, admin: true)
        case "signInWithPassword": return try signInWithPassword(call)
        case "delete": return try delete(call)
        default: throw FirebaseError.notFound
        }
    }

    func requireAdmin(_ call: Call) throws {
        guard call.caller == .admin else { throw HeraldError(.insufficientPermission, "") }
    }
}

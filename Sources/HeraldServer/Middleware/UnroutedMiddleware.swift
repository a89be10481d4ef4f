import Hummingbird

/// Answers what no route takes in Firebase's envelope instead of the router's empty 404: a method a known
/// path does not serve gets `405` with `Allow`, anything else `404 NOT_FOUND`.
struct UnroutedMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allowed = KnownPaths.allowedMethods(path: request.uri.path), !allowed.contains(request.method) else {
                throw FirebaseError.notFound
            }
            throw MethodNotAllowed(allowed: allowed)
        }
    }
}

/// The paths Herald serves, by family, for answering what no route takes.
enum KnownPaths {
    /// The methods a path family serves, or nil for a path Herald does not know.
    static func allowedMethods(path: String) -> [HTTPRequest.Method]? {
        let path = path.hasPrefix("/") ? String(path.dropFirst()) : path
        if path == "__/auth/action" || path == "unsubscribe" { return [.get, .head, .post] }
        if path == "__/auth/links" || path == "__/auth/handler" || path == "health" || path == "metrics" || path == "openapi.json"
            || path.hasPrefix("admin/")
            || path.hasPrefix("emulator/")
            || path.hasPrefix(".well-known/") || path.hasPrefix("robot/") || path.hasPrefix("service_accounts/")
        {
            return [.get, .head]
        }
        if apiRoots.contains(where: path.hasPrefix) { return [.post] }
        return nil
    }

    /// The first segments of every POST-only API path family, from the controllers' own route tables
    /// (`v1/`, `identitytoolkit.googleapis.com/`, `www.googleapis.com/`, `identitytoolkit/`, `securetoken.googleapis.com/`).
    static let apiRoots: Set<String> = {
        let families = IdentityToolkitController.pathFamilies + IdentityToolkitController.legacyFamilies + SecureTokenController.paths
        return Set(families.compactMap { $0.components.first.map { "\($0)/" } })
    }()
}

/// `405` in Firebase's envelope, naming the methods the path serves.
struct MethodNotAllowed: HTTPResponseError {
    let allowed: [HTTPRequest.Method]
    var status: HTTPResponse.Status { .methodNotAllowed }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let methods = allowed.map(\.rawValue).joined(separator: ", ")
        let error = FirebaseError(
            status: .methodNotAllowed, message: "METHOD_NOT_ALLOWED : \(request.method.rawValue) (allowed: \(methods))",
            reason: "invalid", statusName: "INVALID_ARGUMENT")
        var response = try error.response(from: request, context: context)
        response.headers[.allow] = methods + (allowed.contains(.post) ? ", OPTIONS" : "")
        return response
    }
}

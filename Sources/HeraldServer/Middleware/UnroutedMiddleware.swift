import Hummingbird
import Synchronization

/// Answers what no route takes in Firebase's envelope instead of the router's empty 404: a method a known
/// path does not serve gets `405` with `Allow`, anything else `404 NOT_FOUND`.
///
/// The middleware is added before the routes it guards, so it reads the router's own table through `routes`,
/// filled once every route is in (``KnownRoutes/load(_:)``).
struct UnroutedMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: KnownRoutes

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = routes.allowedMethods(path: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method) else { throw FirebaseError.notFound }
            throw MethodNotAllowed(allowed: allowed)
        }
    }
}

/// Every route the router serves, by path pattern and method: which methods a request's path takes.
final class KnownRoutes: Sendable {
    private let table = Mutex<[(path: [RouterPath.Element], method: HTTPRequest.Method)]>([])

    /// Takes the router's routes (HEAD, which it generates for each GET when it builds its responder, is added by
    /// ``allowedMethods(path:)``); called once they are all added.
    func load(_ routes: [(path: RouterPath, method: HTTPRequest.Method)]) {
        table.withLock { $0 = routes.map { (Array($0.path), $0.method) } }
    }

    /// The methods some route serves at `path`, HEAD beside every GET, in a stable order; empty for a path no
    /// route matches. A catch-all (`**`) counts only where no route names the path itself: it answers "not found",
    /// so beside a path's own routes it is no method the path serves.
    func allowedMethods(path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/")
        var named = Set<HTTPRequest.Method>()
        var caught = Set<HTTPRequest.Method>()
        table.withLock { table in
            for route in table where Self.matches(route.path, segments) {
                if route.path.contains(.recursiveWildcard) { caught.insert(route.method) } else { named.insert(route.method) }
            }
        }
        var methods = named.isEmpty ? caught : named
        if methods.contains(.get) { methods.insert(.head) }
        return methods.sorted { $0.rawValue < $1.rawValue }
    }

    /// Whether a route's pattern takes these path segments: `**` takes whatever is left.
    static func matches(_ pattern: [RouterPath.Element], _ segments: [Substring]) -> Bool {
        for (index, element) in pattern.enumerated() {
            if element == .recursiveWildcard { return true }
            guard index < segments.count, element ~= segments[index] else { return false }
        }
        return pattern.count == segments.count
    }
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

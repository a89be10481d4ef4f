import Foundation
import HeraldCore
import Hummingbird

/// Cross-origin access for web apps (the JS SDK in a browser), around every route and every unknown path.
///
/// A preflight (`OPTIONS` with `Access-Control-Request-Method`) from an origin whose host is an authorized
/// domain (`links.authorizedDomains`; `localhost` also admits 127.0.0.1 and [::1]) is answered 204 with the
/// methods and the headers Firebase's SDKs send; any other origin gets 403 and no CORS headers, so the
/// browser refuses the call. Real answers, errors included, name an allowed origin in
/// `Access-Control-Allow-Origin`. The API is cookieless: credentials are never allowed.
struct CORSResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == HeraldRequestContext {
    let inner: Inner
    let allowedHosts: AuthorizedHosts

    init(_ inner: Inner, authorizedDomains: [String]) {
        self.inner = inner
        allowedHosts = AuthorizedHosts(domains: authorizedDomains)
    }

    /// The SDKs' headers, plus any other the preflight asks for: the API is cookieless, so a header adds no
    /// power a page lacks (Firebase and its emulator allow them all).
    static func allowedHeaders(requested request: Request) -> String {
        let known = Set(CORSHeaders.allowed.map { $0.lowercased() })
        let requested = (request.headers[.accessControlRequestHeaders] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !known.contains($0.lowercased()) && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }
        return (CORSHeaders.allowed + requested).joined(separator: ", ")
    }

    @Sendable func respond(to request: Request, context: HeraldRequestContext) async throws -> Response {
        let origin = request.headers[.origin].flatMap { isAllowed($0) ? $0 : nil }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return preflight(request, origin: origin)
        }
        var response: Response
        do {
            response = try await inner.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            guard let origin else { throw error }
            response = try error.response(from: request, context: context)
            Self.allow(origin, in: &response.headers)
            return response
        }
        if let origin { Self.allow(origin, in: &response.headers) }
        return response
    }

    /// Whether `origin` (`scheme://host[:port]`) is http(s) on an allowed host.
    func isAllowed(_ origin: String) -> Bool {
        guard let url = URLComponents(string: origin), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var host = url.host?.lowercased(), url.path.isEmpty, url.query == nil, url.user == nil
        else { return false }
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        return allowedHosts.contains(host)
    }

    private func preflight(_ request: Request, origin: String?) -> Response {
        guard let origin else { return Response(status: .forbidden, headers: [.vary: "Origin"]) }
        var headers: HTTPFields = [
            .vary: "Origin", .accessControlAllowMethods: "GET, POST, OPTIONS", .accessControlAllowHeaders: Self.allowedHeaders(requested: request),
            .accessControlMaxAge: "3600",
        ]
        Self.allow(origin, in: &headers)
        // Private Network Access: a public page may call Herald on a private address when it asks first.
        if request.headers[.init("Access-Control-Request-Private-Network")!]?.lowercased() == "true" {
            headers[.init("Access-Control-Allow-Private-Network")!] = "true"
        }
        return Response(status: .noContent, headers: headers)
    }

    private static func allow(_ origin: String, in headers: inout HTTPFields) {
        headers[.accessControlAllowOrigin] = origin
        if !(headers[.vary]?.contains("Origin") ?? false) { headers[values: .vary].append("Origin") }
    }
}

/// The request headers Firebase's web, Apple and Android SDKs send, which preflights allow.
enum CORSHeaders {
    static let allowed = [
        "Content-Type", "Authorization", "X-Firebase-Locale", "X-Client-Version", "X-Firebase-gmpid", "X-Firebase-AppCheck",
        "X-Firebase-Client", "X-Goog-Api-Key", "X-Goog-Api-Client",
    ]
}

import Dispatch
import Foundation
import HeraldCore
import Hummingbird
import Logging

/// `server.accessLog`: one `info` line per HTTP request that reaches the application (routed or not, CORS
/// preflights too), under the label `herald.access`, whatever `log.level` says:
///
/// ```text
/// GET /v1/accounts:lookup 200 1.8 ms   {method, path, status, duration_ms, client}
/// ```
///
/// The path is logged without its query string, which can hold an action code or an API key, and nothing of the
/// body or the headers (`Authorization` least of all) is. `client` is the address the abuse limits count: the
/// peer's, or with a trusted proxy (`limits.trustedProxies`) the forwarded one. The duration ends when the
/// responder returns the response, as `herald_http_request_duration_seconds`'s does. Requests the front door
/// answers itself (connection caps, timeouts) never reach it.
struct AccessLogResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context == HeraldRequestContext {
    let inner: Inner
    /// Nil: no access log (`server.accessLog: false`), and nothing is measured.
    let logger: Logger?
    let trustedProxies: [IPNetwork]

    init(_ inner: Inner, enabled: Bool, trustedProxies: [IPNetwork], logger: Logger = Logger(label: "herald.access")) {
        self.inner = inner
        var logger = logger
        logger.logLevel = .info
        self.logger = enabled ? logger : nil
        self.trustedProxies = trustedProxies
    }

    @Sendable func respond(to request: Request, context: HeraldRequestContext) async throws -> Response {
        guard let logger else { return try await inner.respond(to: request, context: context) }
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let response = try await inner.respond(to: request, context: context)
            log(logger, request, context, response.status, since: start)
            return response
        } catch {
            log(logger, request, context, (error as? any HTTPResponseError)?.status ?? .internalServerError, since: start)
            throw error
        }
    }

    private func log(_ logger: Logger, _ request: Request, _ context: HeraldRequestContext, _ status: HTTPResponse.Status, since start: UInt64) {
        let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
        let forwarded = trustedProxies.isEmpty ? [] : request.headers[values: .init("X-Forwarded-For")!]
        let client = IPNetwork.client(peer: context.remoteIP, forwardedFor: forwarded, trusted: trustedProxies)
        let line = Self.line(method: request.method.rawValue, path: request.uri.path, status: status.code, milliseconds: milliseconds, client: client)
        logger.info(line.message, metadata: line.metadata)
    }

    /// The message and fields of one request's line; the path loses anything from a `?` or `#` on.
    static func line(
        method: String, path: String, status: Int, milliseconds: Double, client: String?
    ) -> (message: Logger.Message, metadata: Logger.Metadata) {
        let path = String(path.prefix { $0 != "?" && $0 != "#" })
        let duration = String(format: "%.1f", milliseconds)
        return (
            "\(method) \(path) \(status) \(duration) ms",
            ["method": "\(method)", "path": "\(path)", "status": "\(status)", "duration_ms": "\(duration)", "client": "\(client ?? "-")"]
        )
    }
}

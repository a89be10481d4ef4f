import HeraldActions
import HeraldCore
import Hummingbird
import NIOCore

/// The request context: Hummingbird's core storage, the peer address (loopback checks, the ledger's
/// visitor), who is calling, and Herald's strict JSON in and out.
struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The client's address (`ClientAddressMiddleware`, after trusted proxies); the peer's until set.
    var clientIP: String?
    /// Set by `CallerMiddleware`; an app, the lesser privilege, until then.
    var caller = Actions.Caller.app
    /// The largest body `requestDecoder` reads; `BodyLimitMiddleware` sets `server.maxBodyBytes`.
    var maxUploadSize = 64 * 1024
    /// The console's signed-in browser (`ConsoleAuthMiddleware`).
    var consoleSession: ConsoleSessions.Session?
    /// The CSRF check of the console's one multipart form, which its handler makes on the form's first field
    /// (`ConsoleAuthMiddleware`, `ConsoleUpload`).
    var consoleUploadGate: ConsoleUploadGate?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        clientIP = remoteAddress?.ipAddress
    }

    var requestDecoder: StrictJSONDecoder { StrictJSONDecoder() }
    var responseEncoder: FirebaseJSONEncoder { FirebaseJSONEncoder() }

    var remoteIP: String? { remoteAddress?.ipAddress }

    /// Whether `request` comes from a program on this host: a loopback peer, and not a reverse proxy on this
    /// host forwarding someone else's request (`X-Forwarded-For` or `Forwarded`).
    func isLocal(_ request: Request) -> Bool {
        guard let ip = remoteIP, ip == "::1" || ip.hasPrefix("127.") || ip.hasPrefix("::ffff:127.") else { return false }
        return request.headers[.init("X-Forwarded-For")!] == nil && request.headers[.init("Forwarded")!] == nil
    }

    /// Who is using a link, as the ledger records it.
    func visitor(of request: Request) -> Visitor {
        Visitor(ip: clientIP, userAgent: request.headers[.userAgent])
    }

    /// - Throws: `INSUFFICIENT_PERMISSION` unless an administrator is calling.
    func requireAdmin() throws {
        guard caller == .admin else { throw HeraldError(.insufficientPermission, "") }
    }
}

import Hummingbird
import NIOCore

/// The request context: Hummingbird's core storage plus the peer address (for loopback checks and the audit).
struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    var remoteIP: String? { remoteAddress?.ipAddress }

    var isLoopback: Bool {
        guard let ip = remoteIP else { return false }
        return ip == "::1" || ip.hasPrefix("127.") || ip == "::ffff:127.0.0.1"
    }
}

import HeraldCore
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1 child channel with Herald's front door in front of it: `ConnectionAdmission`'s
/// caps, `ConnectionGuard`'s deadlines first in the pipeline and `RequestProgress` after the decoder.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let admission: ConnectionAdmission
    let timeouts: ConnectionGuard.Timeouts

    init(responder: @escaping HTTPChannelHandler.Responder, limits: FrontDoorLimits) {
        var configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestProgress()],
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes,
                maxHeaderFieldCount: limits.maxHeaderCount))
        configuration.idleTimeout = nil  // `ConnectionGuard` keeps every deadline
        inner = HTTP1Channel(responder: responder, configuration: configuration)
        admission = ConnectionAdmission(
            limits: .init(total: limits.maxConnections, perClient: limits.maxConnectionsPerClient, trustedProxies: limits.trustedProxies))
        timeouts = .init(idle: .init(limits.idleTimeout), header: .init(limits.headerTimeout), body: .init(limits.bodyTimeout))
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let refusal: ConnectionAdmission.Refusal?
        switch admission.admit(peer: channel.remoteAddress) {
        case .success(let ticket):
            refusal = nil
            let admission = admission
            channel.closeFuture.whenComplete { _ in admission.release(ticket) }
        case .failure(let reason):
            refusal = reason
            logger.debug("connection refused", metadata: ["reason": "\(reason)"])
        }
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(timeouts: timeouts, refusal: refusal))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// The front door's limits, from `server.*` (see README's security section).
public struct FrontDoorLimits: Sendable {
    public var maxConnections: Int
    public var maxConnectionsPerClient: Int
    public var trustedProxies: [IPNetwork]
    public var idleTimeout: Duration
    public var headerTimeout: Duration
    public var bodyTimeout: Duration
    public var maxHeaderBytes: Int
    public var maxHeaderCount: Int
}

extension HTTPServerBuilder {
    /// HTTP/1 behind Herald's front door.
    static func guardedHTTP1(_ limits: FrontDoorLimits) -> HTTPServerBuilder {
        .init { responder in GuardedHTTP1Channel(responder: responder, limits: limits) }
    }
}

extension FrontDoorLimits {
    /// The limits `server.*` sets; `maxConnections` 0 becomes 10,000, or fewer if the file-descriptor limit allows fewer.
    init(_ server: HeraldConfiguration.Server, trustedProxies: [IPNetwork]) {
        let descriptors = FileDescriptorLimit.raiseToHard()
        self.init(
            maxConnections: server.maxConnections > 0 ? server.maxConnections : max(64, min(10_000, descriptors - 64)),
            maxConnectionsPerClient: server.maxConnectionsPerClient, trustedProxies: trustedProxies,
            idleTimeout: .seconds(server.idleTimeout), headerTimeout: .seconds(server.headerTimeout),
            bodyTimeout: .seconds(server.bodyTimeout), maxHeaderBytes: server.maxHeaderBytes, maxHeaderCount: server.maxHeaderCount)
    }
}

import HeraldCore
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1 child channel with Herald's front door in front of it: `ConnectionAdmission`'s
/// caps, `ConnectionGuard`'s deadlines and pipelining first in the pipeline (with `ClientRequestBudget`'s
/// per-client cap on requests in flight) and `RequestProgress` after the decoder.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let inner: HTTP1Channel
    let admission: ConnectionAdmission
    let requests: ClientRequestBudget
    let timeouts: ConnectionGuard.Timeouts

    /// - Parameters:
    ///   - server: `server.*`: the caps, deadlines and head limits.
    ///   - trustedProxies: peers exempt from the per-client cap (`limits.trustedProxies`).
    ///   - ipv6Prefix: the prefix an IPv6 client has (`limits.ipv6ClientPrefix`).
    ///   - descriptors: the open-file limit in force; `server.maxConnections` 0 becomes 10,000, or this less 64
    ///     (for the ledger and mail) if that is fewer.
    init(
        responder: @escaping HTTPChannelHandler.Responder, server: HeraldConfiguration.Server, trustedProxies: [IPNetwork],
        ipv6Prefix: Int = IPNetwork.defaultIPv6ClientPrefix, descriptors: Int
    ) {
        // No idle timeout of Hummingbird's own: `ConnectionGuard` keeps every deadline.
        let configuration = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestProgress()],
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: server.maxHeaderBytes, maxHeaderListSize: server.maxHeaderBytes,
                maxHeaderFieldCount: server.maxHeaderCount))
        inner = HTTP1Channel(responder: responder, configuration: configuration)
        let total = server.maxConnections > 0 ? server.maxConnections : max(64, min(10_000, descriptors - 64))
        admission = ConnectionAdmission(
            limits: .init(
                total: total, perClient: server.maxConnectionsPerClient, trustedProxies: trustedProxies, ipv6Prefix: ipv6Prefix))
        requests = ClientRequestBudget(perClient: server.maxRequestsPerClient)
        timeouts = .init(
            idle: .init(.seconds(server.idleTimeout)), header: .init(.seconds(server.headerTimeout)),
            body: .init(.seconds(server.bodyTimeout)))
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let refusal: ConnectionAdmission.Refusal?
        var seat: (admission: ConnectionAdmission, ticket: ConnectionAdmission.Ticket)?
        var budget: (requests: ClientRequestBudget, client: String)?
        switch admission.admit(peer: channel.remoteAddress) {
        case .success(let ticket):
            refusal = nil
            seat = (admission, ticket)
            budget = ticket.client.map { (requests, $0) }
            let admission = admission
            channel.closeFuture.whenComplete { _ in admission.release(ticket) }
        case .failure(let reason):
            refusal = reason
            logger.debug("connection refused", metadata: ["reason": "\(reason)"])
        }
        do {
            // One read at a time (NIO's default is four in a row): what waits unread stays in the socket.
            try channel.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            try channel.pipeline.syncOperations.addHandler(
                ConnectionGuard(timeouts: timeouts, refusal: refusal, seat: seat, budget: budget))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 behind Herald's front door (see `GuardedHTTP1Channel.init`).
    static func guardedHTTP1(_ server: HeraldConfiguration.Server, limits: HeraldConfiguration.Limits, descriptors: Int) -> HTTPServerBuilder {
        .init { responder in
            GuardedHTTP1Channel(
                responder: responder, server: server, trustedProxies: limits.trustedProxies, ipv6Prefix: limits.ipv6ClientPrefix,
                descriptors: descriptors)
        }
    }
}

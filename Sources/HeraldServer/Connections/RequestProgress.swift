import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Follows each request through the decoded HTTP parts and tells `ConnectionGuard`; answers methods
/// Herald never serves (`CONNECT`, `TRACE`, unknown ones) with `501` and closes, since after `CONNECT`
/// the HTTP/1 decoder reads no further request on the connection.
final class RequestProgress: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The methods the router decides on; anything else is refused before it.
    static let served: Set<HTTPRequest.Method> = [.get, .head, .post, .put, .patch, .delete, .options]

    private var connection: ConnectionGuard?
    private var refused = false

    func handlerAdded(context: ChannelHandlerContext) {
        connection = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard Self.served.contains(head.method) else {
                refused = true
                connection?.answerAndClose(
                    FirebaseError(
                        status: .notImplemented, message: "METHOD_NOT_SUPPORTED : \(head.method.rawValue)", reason: "invalid",
                        statusName: "UNIMPLEMENTED"))
                return
            }
            connection?.headReceived()
        case .body:
            break
        case .end:
            connection?.endReceived()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: connection?.responseBegun()
        case .body: break
        case .end: connection?.responseEnded()
        }
        context.write(data, promise: promise)
    }
}

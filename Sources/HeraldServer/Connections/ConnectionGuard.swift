import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The deadlines of one HTTP connection, first in its pipeline (it sees the raw bytes).
///
/// A connection is always in one phase, and each phase but handling has a deadline:
/// - **idle** (connected, or between requests): `idle` until the first byte of a request, else it is closed
///   without a word, as keep-alive connections are;
/// - **head** (a request has begun): `header` until its head is complete, else `408` and closed (slowloris);
/// - **body** (the head is in): `body` until the body is complete, else `408` and closed;
/// - **handling** (the request is in, its answer is not out): no deadline; Herald's own work bounds it.
///
/// A request is done when both its body is in and its answer is out, in either order (Herald may answer
/// before reading a body, e.g. a 405). A client that stops reading answers is cut off once the connection
/// has been unwritable for `body`.
///
/// `RequestProgress`, after the HTTP decoder, tells it where each request stands. A connection that
/// `ConnectionAdmission` refused is answered here (`503` or `429`, `Connection: close`) and closed.
///
/// Every close of the output (Hummingbird's after a parse error or a `Connection: close` answer, and this
/// handler's own) becomes a lingering close, as RFC 9112 §9.6 describes: what the client still sends is
/// read and dropped, here before the decoder, so its FIN can arrive, and the connection closes fully
/// within `lingerTimeout`. Without it, a client whose request the decoder refused (a head over
/// `maxHeaderBytes`) or whose body nobody read keeps its connection, and all its buffers, for ever:
/// nothing reads the socket again, so its FIN waits behind a full receive window.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest a half-closed connection drains before it is closed.
    static let lingerTimeout = TimeAmount.seconds(2)
    /// The same for a connection refused at admission.
    static let refusalLinger = TimeAmount.milliseconds(250)

    struct Timeouts: Sendable {
        var idle: TimeAmount
        var header: TimeAmount
        var body: TimeAmount
    }

    private enum Phase {
        case idle, head, body, handling, closing
    }

    private let timeouts: Timeouts
    private let refusal: ConnectionAdmission.Refusal?
    private var phase = Phase.idle
    /// Requests whose head arrived and whose response has not ended.
    private var inFlight = 0
    /// The current request's head is in and its end is not.
    private var readingRequest = false
    /// Whether the current request's response has begun (then a timeout closes without a 408).
    private var responding = false
    /// Bytes of a next request arrived while one was being handled.
    private var nextRequestBegun = false
    private var deadline: Scheduled<Void>?
    /// Runs while the connection is unwritable (the client reads no answers).
    private var stall: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(timeouts: Timeouts, refusal: ConnectionAdmission.Refusal?) {
        self.timeouts = timeouts
        self.refusal = refusal
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        stall?.cancel()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        stall?.cancel()
        phase = .closing
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .closing:
            return  // a refused or timed-out connection: what it still sends is dropped
        case .idle:
            enter(.head, after: timeouts.header)
        case .handling:
            nextRequestBegun = true
        case .head, .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if phase == .closing { context.read() }  // keep draining: nothing downstream asks for reads any more
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        stall?.cancel()
        stall = nil
        if !context.channel.isWritable, phase != .closing {
            stall = context.eventLoop.assumeIsolated().scheduleTask(in: timeouts.body) { [self] in
                closeQuietly()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: mode, promise: promise)
        if mode == .output { linger(context) }
    }

    // MARK: Reports from `RequestProgress`

    func headReceived() {
        guard phase != .closing else { return }
        inFlight += 1
        readingRequest = true
        responding = false
        nextRequestBegun = false
        enter(.body, after: timeouts.body)
    }

    func endReceived() {
        guard phase != .closing else { return }
        readingRequest = false
        if inFlight == 0 {
            settle()  // answered before its body was read: done now
        } else {
            enter(.handling, after: nil)
        }
    }

    func responseBegun() { responding = true }

    func responseEnded() {
        guard phase != .closing else { return }
        inFlight = max(0, inFlight - 1)
        // While the body is still coming, the body deadline keeps running.
        if inFlight == 0, !readingRequest { settle() }
    }

    /// Every request so far is done: wait for the next one.
    private func settle() {
        if nextRequestBegun {
            nextRequestBegun = false
            enter(.head, after: timeouts.header)
        } else {
            enter(.idle, after: timeouts.idle)
        }
    }

    /// Answers `error` in Firebase's envelope with `Connection: close`, and closes.
    func answerAndClose(_ error: FirebaseError, retryAfter: Int? = nil, linger: TimeAmount = ConnectionGuard.lingerTimeout) {
        guard let context, phase != .closing else { return }
        // The whole exchange ends within `linger`, even when the client reads nothing and the write never completes.
        beginClosing(context, within: linger)
        let body = (try? FirebaseJSONEncoder.json(FirebaseError.Envelope(error))) ?? Data()
        let status = error.status
        var head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json; charset=UTF-8\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n"
        if let retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
        var buffer = context.channel.allocator.buffer(string: head + "\r\n")
        buffer.writeBytes(body)
        // Half-close after the answer, then drop what the client still sends for a moment: closing at once
        // could reset the connection before the client reads the answer.
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { [self] _ in
            guard let context = self.context, context.channel.isActive else { return }
            context.close(mode: .output, promise: nil)
            context.read()
        }
    }

    /// Drops what the client still sends until it closes, or `lingerTimeout` passes.
    private func linger(_ context: ChannelHandlerContext) {
        guard context.channel.isActive, phase != .closing else { return }
        beginClosing(context, within: Self.lingerTimeout)
        context.read()
    }

    /// The connection is closing: what arrives is dropped, and it closes fully within `time` at the latest.
    private func beginClosing(_ context: ChannelHandlerContext, within time: TimeAmount) {
        phase = .closing
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: time) { [self] in
            self.context?.close(promise: nil)
        }
    }

    /// Closes without an answer.
    private func closeQuietly() {
        guard let context, phase != .closing else { return }
        phase = .closing
        context.close(promise: nil)
    }

    private func start(_ context: ChannelHandlerContext) {
        switch refusal {
        // A refused connection holds its descriptor only briefly: a flood of them cannot exhaust descriptors.
        case .full?:
            answerAndClose(
                FirebaseError(
                    status: .serviceUnavailable, message: "UNAVAILABLE : too many connections", reason: "backendError",
                    statusName: "UNAVAILABLE"),
                retryAfter: 1, linger: Self.refusalLinger)
        case .clientFull?:
            answerAndClose(
                FirebaseError(
                    status: .tooManyRequests, message: "TOO_MANY_ATTEMPTS_TRY_LATER : too many connections from this client",
                    reason: "rateLimitExceeded", statusName: "RESOURCE_EXHAUSTED"),
                retryAfter: 1, linger: Self.refusalLinger)
        case nil:
            if deadline == nil, phase == .idle { enter(.idle, after: timeouts.idle) }
        }
    }

    private func enter(_ next: Phase, after timeout: TimeAmount?) {
        phase = next
        deadline?.cancel()
        deadline = nil
        guard let timeout, let context else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            expire(next)
        }
    }

    private func expire(_ expired: Phase) {
        guard phase == expired else { return }
        switch expired {
        case .idle:
            closeQuietly()
        case .head:
            answerAndClose(Self.timedOut("the request's head took too long"))
        case .body:
            if responding {
                closeQuietly()
            } else {
                answerAndClose(Self.timedOut("the request's body took too long"))
            }
        case .handling, .closing:
            break
        }
    }

    private static func timedOut(_ detail: String) -> FirebaseError {
        FirebaseError(status: .requestTimeout, message: "REQUEST_TIMEOUT : \(detail)", reason: "invalid", statusName: "DEADLINE_EXCEEDED")
    }
}

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

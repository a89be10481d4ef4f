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
/// `ConnectionAdmission` refused is answered here (`503` or `429`, `Connection: close`) and closed; an admitted
/// one tells the admission when it is idle, and closes without a word when the admission makes it give way.
///
/// Pipelined requests are taken one at a time, as nginx takes them: the decoder is given the bytes of the next
/// request's head only once every earlier request is answered, the connection is writable (the client reads
/// its answers) and the client has fewer than `server.maxRequestsPerClient` requests in flight over all its
/// connections (`ClientRequestBudget`). Until then the socket is not read, so what a connection holds is one
/// read of raw bytes (at most 64 KiB), one request and the write buffer's high-water mark of answers, however
/// much the client sends, and a client pipelining on many connections takes its turn with everyone else.
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
    /// Requests of one connection given to the decoder and not yet answered, at most (bodiless ones; the bytes
    /// after a body come in slices of `bodySlice`, which may hold a few more).
    static let pipelineDepth = 1
    /// The most bytes of a body given to the decoder at once.
    static let bodySlice = 4096

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
    /// The admitted connection's place in `ConnectionAdmission`; nil when refused.
    private let seat: (admission: ConnectionAdmission, ticket: ConnectionAdmission.Ticket)?
    /// Whether `seat` is offered to the admission as idle.
    private var offeredIdle = false
    /// The client's requests in flight over all its connections, and its key there; nil for a trusted proxy.
    private let budget: (requests: ClientRequestBudget, client: String)?
    /// Bytes read and not yet given to the decoder (pipelined requests waiting their turn).
    private var pending: ByteBuffer?
    /// A read was asked for and held back while the connection waits.
    private var readHeld = false
    /// Waiting to be woken by `budget`.
    private var waitingForBudget = false
    private var phase = Phase.idle {
        didSet { offerSeat() }
    }
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

    init(
        timeouts: Timeouts, refusal: ConnectionAdmission.Refusal?,
        seat: (admission: ConnectionAdmission, ticket: ConnectionAdmission.Ticket)? = nil,
        budget: (requests: ClientRequestBudget, client: String)? = nil
    ) {
        self.timeouts = timeouts
        self.refusal = refusal
        self.seat = seat
        self.budget = budget
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
        pending = nil
        if let budget, inFlight > 0 { budget.requests.ended(budget.client, count: inFlight) }
        inFlight = 0
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
        let bytes = unwrapInboundIn(data)
        if pending == nil {
            pending = bytes
        } else {
            pending?.writeImmutableBuffer(bytes)
        }
        feed(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if phase == .closing { context.read() }  // keep draining: nothing downstream asks for reads any more
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if phase == .closing || mayRead(context) {
            context.read()
        } else {
            readHeld = true
        }
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
        if context.channel.isWritable { resume(context) }
    }

    // MARK: Pipelined requests, one at a time

    /// Whether the decoder may have the next request's head now (see the type's comment); asks the client's
    /// budget last, and then waits to be woken if it says no.
    private func mayBeginRequest(_ context: ChannelHandlerContext) -> Bool {
        guard inFlight < Self.pipelineDepth, context.channel.isWritable, !waitingForBudget else { return false }
        guard let budget else { return true }
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        if budget.requests.mayStart(budget.client, orWake: { loop.execute { handler.value.budgetFreed() } }) { return true }
        waitingForBudget = true
        return false
    }

    /// Whether to read the socket: only once what was read is with the decoder, and a request could begin
    /// (or a body is coming).
    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        pending == nil && (readingRequest || (inFlight < Self.pipelineDepth && context.channel.isWritable))
    }

    /// Gives the decoder what it may have of the bytes read: a body in slices, a head only when a request may begin.
    /// - Returns: whether anything was given.
    @discardableResult
    private func feed(_ context: ChannelHandlerContext) -> Bool {
        var fed = false
        while phase != .closing, var bytes = pending {
            let length: Int
            if readingRequest {
                length = min(bytes.readableBytes, Self.bodySlice)
            } else if mayBeginRequest(context) {
                length = Self.headLength(in: bytes) ?? bytes.readableBytes
            } else {
                break
            }
            let slice = bytes.readSlice(length: length)!
            pending = bytes.readableBytes > 0 ? bytes : nil
            fed = true
            context.fireChannelRead(wrapInboundOut(slice))
        }
        return fed
    }

    /// Feeds the decoder what waited and reads again if a read was held back; outside a read, so the decoded
    /// parts are also delivered.
    private func resume(_ context: ChannelHandlerContext) {
        guard phase != .closing else { return }
        if feed(context) { context.fireChannelReadComplete() }
        if readHeld, mayRead(context) {
            readHeld = false
            context.read()
        }
    }

    /// The client's budget has room again (see `ClientRequestBudget.mayStart`).
    private func budgetFreed() {
        waitingForBudget = false
        let began = inFlight
        if let context, phase != .closing { resume(context) }
        if inFlight == began, let budget { budget.requests.passOn(budget.client) }
    }

    /// The length of `bytes` up to and including the end of the first head in them (`CRLF CRLF`), if one ends there.
    static func headLength(in bytes: ByteBuffer) -> Int? {
        bytes.withUnsafeReadableBytes { raw in
            var index = 3
            while index < raw.count {
                if raw[index] == 10, raw[index - 1] == 13, raw[index - 2] == 10, raw[index - 3] == 13 { return index + 1 }
                index += 1
            }
            return nil
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: mode, promise: promise)
        if mode == .output { linger(context) }
    }

    // MARK: Reports from `RequestProgress`

    func headReceived() {
        guard phase != .closing else { return }
        inFlight += 1
        if let budget { budget.requests.started(budget.client) }
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
        if inFlight > 0 {
            inFlight -= 1
            if let budget { budget.requests.ended(budget.client) }
        }
        // While the body is still coming, the body deadline keeps running.
        if inFlight == 0, !readingRequest { settle() }
        // The next request waits for this call (inside a write) to return.
        context?.eventLoop.assumeIsolated().execute { [self] in
            if let context { resume(context) }
        }
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

    /// Offers the connection to the admission as idle while it is, and takes the offer back once it is not.
    private func offerSeat() {
        guard let seat, (phase == .idle) != offeredIdle else { return }
        offeredIdle = phase == .idle
        guard offeredIdle, let loop = context?.eventLoop else { return seat.admission.busy(seat.ticket) }
        let handler = NIOLoopBound(self, eventLoop: loop)
        seat.admission.idle(seat.ticket) { loop.execute { handler.value.giveWay() } }
    }

    /// The admission counted this idle connection out to let another in: it closes, unless a request began meanwhile
    /// (then it runs on, uncounted, until it closes).
    private func giveWay() {
        if phase == .idle { closeQuietly() }
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

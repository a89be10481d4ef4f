import CCurlShim
import Foundation
import HeraldCore

/// Every SMTP connection of a worker, driven from the one thread that calls `start` and `poll`.
///
/// libcurl opens each connection — TCP, greeting, EHLO, STARTTLS, AUTH, `CURLOPT_CONNECT_ONLY` — on a
/// short-lived thread of its own, so a slow server never holds the others. Herald then speaks each
/// mail transaction itself through `curl_easy_send`/`curl_easy_recv` (TLS stays libcurl's), without
/// blocking. When the server advertises PIPELINING (RFC 2920), a lane holds two messages at once
/// (`depth`): once the first one's 354 arrives, its content, its end of data and the second one's MAIL
/// FROM, RCPT TO and DATA go out in one write (message content may open a command group), so a
/// connection carries one write and one round trip per message where libcurl's own SMTP takes four.
/// Without PIPELINING, one command at a time. One `poll(2)` waits on every connection at once.
///
/// A failure that is not the message's (a timeout, a dropped connection, a refusal of MAIL) closes
/// the connection at once, and the next message opens a fresh one; so does any refusal, since the
/// transaction's state is then unknown. Once a message's final dot is written, its reply has a wait of
/// its own (`smtp.dataTimeout`, RFC 5321's 10 minutes by default), and a timeout or a broken connection
/// then finishes it `possiblyDelivered`: the server may have taken it. A reused connection the server
/// closed while idle (Postfix's `421` after its idle timeout) is reopened and the message sent again,
/// since none of it had gone.
/// A lane's second message, whose commands may have gone out behind the first one's content, is never
/// delivered before its own 354: when the first one is refused it goes on a fresh connection, and when
/// the connection breaks it finishes `unsent` (the worker hands it back to the queue).
///
/// Only `waker` may be used from other threads.
public final class CurlSMTPDispatcher: MailDispatcher, @unchecked Sendable {
    public let lanes: Int
    /// A lane's message in progress and the next one (`start` takes it while the first is under way).
    public let depth = 2
    private let settings: SMTPSettings
    private var states: [LaneState]
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Guards what the opening threads hand over, and the wake-up flag.
    private let condition = NSCondition()
    private var openedConnections: [(lane: Int, session: Result<SMTPSession, SMTPSession.OpenFailure>)] = []
    private var opening = 0
    private var wakePending = false
    private var opened = 0

    /// Initialises libcurl once per process; call before starting threads.
    public static func initializeLibrary() { _ = globalInit }
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// One message on its way.
    private struct Job {
        let sender: String
        let recipients: [String]
        let message: [UInt8]
        /// Once sent again on a fresh connection after the reused one turned out closed.
        var resent = false
    }

    /// Which reply the transaction waits for next.
    private enum Step {
        case mail, rcpt, data, body

        var command: SMTPCommand {
            switch self {
            case .mail: .mail
            case .rcpt: .rcpt
            case .data, .body: .data
            }
        }
    }

    private enum LaneState {
        case idle(SMTPSession?)
        case opening(Job, next: Job?)
        case sending(Transaction)
    }

    /// A message's exchange on an open connection.
    private struct Transaction {
        let session: SMTPSession
        var job: Job
        /// The lane's next message. With PIPELINING its commands follow this message's end of data
        /// (`nextBegun`); otherwise it begins once this one is answered.
        var next: Job?
        var nextBegun = false
        /// Replies awaited, in order (the next message's after this one's `.body`); commands not yet sent
        /// (no PIPELINING) follow them in `unsent`.
        var awaiting: [Step]
        var unsent: [(Step, String)]
        var output: [UInt8]
        var written = 0
        var reader = SMTPReplyReader()
        var lastReply: String?
        /// The server has accepted something of this message (a 2xx or the 354).
        var accepted = false
        /// Where this message's end of data ends in `output`, until it has been written.
        var dataEnd: Int?
        /// This message's final dot went out: from then on the server may have taken it.
        var dotWritten = false
        var deadline: DispatchTime
    }

    public init(settings: SMTPSettings, lanes: Int) throws {
        Self.initializeLibrary()
        self.settings = settings
        self.lanes = lanes
        states = Array(repeating: .idle(nil), count: lanes)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw HeraldError(.invalidConfiguration, "could not create a pipe: errno \(errno)") }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        (wakeRead, wakeWrite) = (fds[0], fds[1])
    }

    deinit {
        close()
        _ = Glibc.close(wakeRead)
        _ = Glibc.close(wakeWrite)
    }

    public var connectionsOpened: Int { condition.withLock { opened } }

    public var waker: @Sendable () -> Void {
        { [self] in wake() }
    }

    private func wake() {
        condition.lock()
        let write = !wakePending
        wakePending = true
        condition.unlock()
        if write {
            var byte: UInt8 = 1
            _ = Glibc.write(wakeWrite, &byte, 1)
        }
    }

    public func start(lane: Int, from sender: String, to recipients: [String], message: [UInt8]) {
        let job = Job(sender: sender, recipients: recipients, message: message)
        switch states[lane] {
        case .idle(let session?):
            begin(lane, job, next: nil, on: session)
        case .idle(nil):
            open(lane, for: job, next: nil)
        case .opening(let first, next: nil):
            states[lane] = .opening(first, next: job)
        case .sending(var transaction) where transaction.next == nil:
            states[lane] = .idle(nil)  // the transaction's buffers are then its own to change (no copy)
            transaction.next = job
            // Its content already queued, the first message's end of data may be followed by this one's commands.
            if transaction.session.pipelining && transaction.awaiting == [.body] { beginNext(&transaction) }
            states[lane] = .sending(transaction)
        default:
            preconditionFailure("lane \(lane) already holds \(depth) messages")
        }
    }

    /// Opens a connection for the job (and the lane's next one) on a thread of its own; `poll` picks it up.
    private func open(_ lane: Int, for job: Job, next: Job?) {
        states[lane] = .opening(job, next: next)
        let settings = settings
        condition.withLock { opening += 1 }
        let thread = Thread.named("herald-smtp-open") { [self] in
            let session = SMTPSession.open(settings)
            let connects: Int
            switch session {
            case .success: connects = 1
            case .failure(let failure): connects = failure.connects
            }
            condition.withLock {
                openedConnections.append((lane, session))
                opened += connects
                opening -= 1
                condition.broadcast()
            }
            wake()
        }
        thread.start()
    }

    /// A job's MAIL FROM, RCPT TO and DATA commands.
    private static func commands(_ job: Job, on session: SMTPSession) -> [(Step, String)] {
        let size = session.announcesSize ? " SIZE=\(job.message.count)" : ""
        var commands: [(Step, String)] = [(.mail, "MAIL FROM:<\(job.sender)>\(size)\r\n")]
        for recipient in job.recipients { commands.append((.rcpt, "RCPT TO:<\(recipient)>\r\n")) }
        commands.append((.data, "DATA\r\n"))
        return commands
    }

    private var exchangeDeadline: DispatchTime { .now() + .milliseconds(Int(settings.timeout * 1000)) }

    /// Starts the job's transaction on an open connection.
    private func begin(_ lane: Int, _ job: Job, next: Job?, on session: SMTPSession) {
        let commands = Self.commands(job, on: session)
        // With PIPELINING every command goes at once; otherwise each waits for the reply to the one before.
        let now = session.pipelining ? commands[...] : commands.prefix(1)
        states[lane] = .sending(
            Transaction(
                session: session, job: job, next: next, awaiting: now.map(\.0), unsent: Array(commands[now.endIndex...]),
                output: Array(now.map(\.1).joined().utf8), deadline: exchangeDeadline))
    }

    /// Queues the next job's commands behind the current one's end of data (PIPELINING only).
    private func beginNext(_ transaction: inout Transaction) {
        guard let next = transaction.next, !transaction.nextBegun else { return }
        let commands = Self.commands(next, on: transaction.session)
        transaction.nextBegun = true
        transaction.awaiting += commands.map(\.0)
        if transaction.written == transaction.output.count {
            transaction.output = []
            transaction.written = 0
        }
        for (_, command) in commands { transaction.output += command.utf8 }
    }

    public func poll(timeout: TimeInterval) -> [(lane: Int, result: DeliveryResult)] {
        var finished: [(lane: Int, result: DeliveryResult)] = []
        // Writes first: a transaction just begun goes out before the wait.
        for lane in 0..<lanes { flush(lane, &finished) }
        guard finished.isEmpty else { return finished }
        var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var polled: [Int] = []
        var nearest = DispatchTime.now() + .milliseconds(Int(max(0, timeout) * 1000))
        for lane in 0..<lanes {
            switch states[lane] {
            case .idle(let session?):
                // An idle connection is watched too: the server may close it (a 421 after its idle timeout).
                fds.append(pollfd(fd: session.socket, events: Int16(POLLIN), revents: 0))
                polled.append(lane)
            case .sending(let transaction):
                let events = transaction.written < transaction.output.count ? POLLIN | POLLOUT : POLLIN
                fds.append(pollfd(fd: transaction.session.socket, events: Int16(events), revents: 0))
                polled.append(lane)
                nearest = min(nearest, transaction.deadline)
            case .idle(nil), .opening: break
            }
        }
        let now = DispatchTime.now()
        let milliseconds = nearest > now ? Int32(min((nearest.uptimeNanoseconds - now.uptimeNanoseconds + 999_999) / 1_000_000, 60_000)) : 0
        let ready = Glibc.poll(&fds, nfds_t(fds.count), milliseconds)
        if ready > 0 {
            if fds[0].revents != 0 { drainWakeUps() }
            for (index, lane) in polled.enumerated() where fds[index + 1].revents != 0 {
                service(lane, &finished)
            }
        }
        collectOpened(&finished)
        expire(&finished)
        return finished
    }

    private func drainWakeUps() {
        // Read, then clear the flag: a wake-up in between is not lost, since the caller looks at what it
        // was about after this returns.
        var buffer = [UInt8](repeating: 0, count: 64)
        while Glibc.read(wakeRead, &buffer, buffer.count) > 0 {}
        condition.withLock { wakePending = false }
    }

    /// Connections opened since the last poll begin their transactions; failed opens finish their jobs.
    private func collectOpened(_ finished: inout [(lane: Int, result: DeliveryResult)]) {
        let arrived = condition.withLock {
            defer { openedConnections = [] }
            return openedConnections
        }
        for (lane, session) in arrived {
            guard case .opening(let job, let next) = states[lane] else { continue }
            switch session {
            case .success(let session):
                begin(lane, job, next: next, on: session)
                flush(lane, &finished)
            case .failure(let failure):
                states[lane] = .idle(nil)
                finished.append((lane, failure.result))
                if next != nil { finished.append((lane, Self.notSent(after: failure.result))) }
            }
        }
    }

    /// Sends what the lane's transaction has ready.
    private func flush(_ lane: Int, _ finished: inout [(lane: Int, result: DeliveryResult)]) {
        guard case .sending(var transaction) = states[lane], transaction.written < transaction.output.count else { return }
        states[lane] = .idle(nil)  // the transaction's buffers are then its own to change (no copy)
        let (written, failed) = transaction.session.write(transaction.output, from: transaction.written)
        transaction.written = written
        if let end = transaction.dataEnd, written >= end {
            // The final dot is out: the reply to it gets its own wait.
            transaction.dataEnd = nil
            transaction.dotWritten = true
            transaction.deadline = .now() + .milliseconds(Int(settings.dataTimeout * 1000))
        }
        if failed {
            if retryOnFreshConnection(lane, transaction) { return }
            fail(lane, transaction, broken(transaction, "sending failed: the connection broke"), &finished)
            return
        }
        states[lane] = .sending(transaction)
    }

    /// The outcome of a connection that broke: possibly delivered once the message's final dot went out and its reply
    /// is the one awaited, the connection's failure before.
    private func broken(_ transaction: Transaction, _ why: String) -> DeliveryResult {
        if transaction.dotWritten && transaction.awaiting.first == .body {
            return SMTPVerdict.possiblyDelivered("\(why) after the end of data", lastReply: transaction.lastReply)
        }
        return SMTPVerdict.broken(why, lastReply: transaction.lastReply)
    }

    /// Reads and acts on what arrived on the lane's connection. What a reply makes ready to send (a message's
    /// content after its 354) goes out at the next `poll`'s start, so a message started in between joins the write.
    private func service(_ lane: Int, _ finished: inout [(lane: Int, result: DeliveryResult)]) {
        switch states[lane] {
        case .idle(let session?):
            // Anything from the server on an idle connection (a 421, the end of the connection) ends it.
            var reader = SMTPReplyReader()
            _ = session.read(into: &reader)
            session.close(polite: false)
            states[lane] = .idle(nil)
        case .sending(var transaction):
            states[lane] = .idle(nil)  // the transaction's buffers are then its own to change (no copy)
            let read = transaction.session.read(into: &transaction.reader)
            while let reply = transaction.reader.next() {
                transaction.lastReply = reply.line
                guard let step = transaction.awaiting.first else {
                    fail(lane, transaction, SMTPVerdict.broken("unexpected reply", lastReply: reply.line), &finished)
                    return
                }
                transaction.awaiting.removeFirst()
                switch (step, reply.code) {
                case (.body, 200..<300):
                    transaction.session.served += 1
                    finished.append((lane, DeliveryResult(outcome: .sent, replyCode: reply.code, replyText: reply.line)))
                    guard let next = transaction.next else {
                        states[lane] = .idle(transaction.session)
                        return
                    }
                    guard transaction.nextBegun else {
                        begin(lane, next, next: nil, on: transaction.session)
                        return
                    }
                    // The next message's commands are out: its replies follow.
                    transaction.job = next
                    (transaction.next, transaction.nextBegun, transaction.accepted, transaction.dotWritten) = (nil, false, false, false)
                    transaction.deadline = exchangeDeadline
                case (.data, 354):
                    transaction.accepted = true
                    transaction.awaiting = [.body]
                    transaction.output = SMTPData.block(transaction.job.message, room: 512)
                    transaction.written = 0
                    transaction.dataEnd = transaction.output.count
                    if transaction.session.pipelining { beginNext(&transaction) }
                case (.mail, 200..<300), (.rcpt, 200..<300):
                    transaction.accepted = true
                    if !transaction.unsent.isEmpty {
                        let (next, command) = transaction.unsent.removeFirst()
                        transaction.awaiting.append(next)
                        transaction.output = Array(command.utf8)
                        transaction.written = 0
                    }
                default:
                    if SMTPVerdict.isClosing(reply.line), retryOnFreshConnection(lane, transaction) { return }
                    fail(lane, transaction, SMTPVerdict.refusal(reply.line, to: step.command), &finished)
                    return
                }
            }
            switch read {
            case .data:
                states[lane] = .sending(transaction)
            case .closed:
                if retryOnFreshConnection(lane, transaction) { return }
                fail(lane, transaction, broken(transaction, "the server closed the connection"), &finished)
            case .failed(let error):
                if retryOnFreshConnection(lane, transaction) { return }
                fail(lane, transaction, broken(transaction, error), &finished)
            }
        case .idle(nil), .opening: break
        }
    }

    /// A reused connection the server had closed before accepting anything of this message: the message
    /// goes again, once, on a fresh connection.
    private func retryOnFreshConnection(_ lane: Int, _ transaction: Transaction) -> Bool {
        guard transaction.session.served > 0, !transaction.accepted, !transaction.job.resent else { return false }
        transaction.session.close(polite: false)
        var job = transaction.job
        job.resent = true
        open(lane, for: job, next: transaction.next)
        return true
    }

    /// Ends a transaction that failed; its connection closes (its state is unknown). The lane's next message
    /// (never sent: it had no 354) goes on a fresh connection after a refusal of this one, and fails unsent with a
    /// broken or timed-out connection.
    private func fail(
        _ lane: Int, _ transaction: Transaction, _ result: DeliveryResult, _ finished: inout [(lane: Int, result: DeliveryResult)]
    ) {
        transaction.session.close(polite: false)
        states[lane] = .idle(nil)
        finished.append((lane, result))
        guard let next = transaction.next else { return }
        if result.outcome == .connection || result.outcome == .possiblyDelivered {
            finished.append((lane, Self.notSent(after: result)))
        } else {
            open(lane, for: next, next: nil)
        }
    }

    /// The outcome of a lane's next message when the connection failed before its turn.
    private static func notSent(after failure: DeliveryResult) -> DeliveryResult {
        DeliveryResult(outcome: .unsent, replyCode: nil, replyText: "not sent: \(failure.replyText)")
    }

    /// Transactions past `smtp.timeout` fail as the connection's; past `smtp.dataTimeout` after the final dot, the
    /// message is possibly delivered.
    private func expire(_ finished: inout [(lane: Int, result: DeliveryResult)]) {
        let now = DispatchTime.now()
        for lane in 0..<lanes {
            guard case .sending(let transaction) = states[lane], transaction.deadline <= now else { continue }
            let waitingFor = transaction.awaiting.first?.command.stage ?? "DATA"
            let afterDot = transaction.dotWritten && transaction.awaiting.first == .body
            let seconds = String(format: "%g", afterDot ? settings.dataTimeout : settings.timeout)
            let why = "timed out after \(seconds) s waiting for the reply to \(afterDot ? "the end of data" : waitingFor)"
            let result =
                afterDot
                ? SMTPVerdict.possiblyDelivered(why, lastReply: transaction.lastReply)
                : SMTPVerdict.broken(why, lastReply: transaction.lastReply)
            fail(lane, transaction, result, &finished)
        }
    }

    /// Waits for connections being opened, then ends every connection, idle ones with a QUIT.
    public func close() {
        condition.lock()
        while opening > 0 { condition.wait() }
        let late = openedConnections
        openedConnections = []
        condition.unlock()
        for case (_, .success(let session)) in late { session.close(polite: true) }
        for lane in 0..<lanes {
            switch states[lane] {
            case .idle(let session?): session.close(polite: true)
            case .sending(let transaction): transaction.session.close(polite: false)
            case .idle(nil), .opening: break
            }
            states[lane] = .idle(nil)
        }
    }
}

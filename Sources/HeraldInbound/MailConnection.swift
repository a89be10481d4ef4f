import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Runs one client's `MailSession` over its channel: reads lines, writes replies, calls `deliver`, and closes
/// the connection on QUIT, on the idle timeout, or at graceful shutdown once no transaction is open.
struct MailConnection: Sendable {
    let settings: MailSession.Settings
    let idleTimeout: Duration
    let logger: Logger
    let deliver: @Sendable (MailListener.Delivery) async -> [MailListener.Outcome]

    /// Turns a client away with 421 (too many connections open) and closes.
    func refuse(_ client: NIOAsyncChannel<MailLine, ByteBuffer>) async {
        try? await client.executeThenClose { _, replies in
            try await replies.write(ByteBuffer(string: "421 4.7.0 \(settings.hostname) too many connections, try again later\r\n"))
        }
    }

    func run(_ client: NIOAsyncChannel<MailLine, ByteBuffer>) async {
        var logger = logger
        logger[metadataKey: "peer"] = "\(client.channel.remoteAddress?.description ?? "unknown")"
        logger.debug("mail connection opened")
        let watch = MailConnectionWatch(channel: client.channel, hostname: settings.hostname, idleTimeout: idleTimeout)
        do {
            try await client.executeThenClose { lines, replies in
                try await withThrowingTaskGroup { group in
                    group.addTask { await watch.run() }
                    try await withGracefulShutdownHandler {
                        try await converse(lines: lines, replies: replies, watch: watch, logger: logger)
                    } onGracefulShutdown: {
                        watch.shutDown()
                    }
                    group.cancelAll()
                }
            }
        } catch {
            logger.debug("mail connection failed", metadata: ["error": "\(error)"])
        }
        logger.debug("mail connection closed")
    }

    private func converse(
        lines: NIOAsyncChannelInboundStream<MailLine>, replies: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        watch: MailConnectionWatch, logger: Logger
    ) async throws {
        var session = MailSession(settings: settings)
        try await replies.write(ByteBuffer(string: session.greeting))
        var inTransaction = false
        for try await line in lines {
            guard watch.received() else { return }
            switch session.receive(line) {
            case .none:
                break
            case .reply(let text):
                try await replies.write(ByteBuffer(string: text))
            case .close(let text):
                try await replies.write(ByteBuffer(string: text))
                return
            case .deliver(let delivery):
                let outcomes = await deliverWhileBusy(delivery, watch: watch, logger: logger)
                try await replies.write(ByteBuffer(string: session.delivered(outcomes)))
            }
            if session.isInTransaction != inTransaction {
                inTransaction = session.isInTransaction
                guard watch.transactionChanged(open: inTransaction) else {
                    try await replies.write(ByteBuffer(string: MailConnectionWatch.shutdownReply(settings.hostname)))
                    return
                }
            }
        }
    }

    private func deliverWhileBusy(
        _ delivery: MailListener.Delivery, watch: MailConnectionWatch, logger: Logger
    ) async -> [MailListener.Outcome] {
        watch.setBusy(true)
        let outcomes = await deliver(delivery)
        watch.setBusy(false)
        let accepted = outcomes.prefix(delivery.recipients.count).count { $0 == .accepted }
        logger.info(
            "mail received",
            metadata: [
                "recipients": "\(delivery.recipients.count)", "accepted": "\(accepted)", "bytes": "\(delivery.data.count)",
            ])
        return outcomes
    }
}

/// The idle timeout and graceful shutdown of one connection, which act from outside its read loop.
///
/// The read loop reports each line, each delivery and each transaction; the watch closes the channel with a
/// 421 when the client has been silent too long, or at shutdown when no transaction is open.
final class MailConnectionWatch: Sendable {
    private struct State {
        var lastActivity = ContinuousClock.now
        var busy = false
        var inTransaction = false
        var shuttingDown = false
        var closing = false
    }

    private let state = Mutex(State())
    private let channel: any Channel
    private let hostname: String
    private let idleTimeout: Duration

    init(channel: any Channel, hostname: String, idleTimeout: Duration) {
        self.channel = channel
        self.hostname = hostname
        self.idleTimeout = idleTimeout
    }

    static func shutdownReply(_ hostname: String) -> String {
        "421 4.3.2 \(hostname) Service shutting down\r\n"
    }

    /// Notes a line from the client; false once the watch has closed the connection.
    func received() -> Bool {
        state.withLock { state in
            state.lastActivity = .now
            return !state.closing
        }
    }

    /// Pauses the idle timeout while `deliver` runs: the client is waiting for us then.
    func setBusy(_ busy: Bool) {
        state.withLock { state in
            state.busy = busy
            state.lastActivity = .now
        }
    }

    /// Notes a transaction opening or ending; false if the connection should now close for shutdown.
    func transactionChanged(open: Bool) -> Bool {
        state.withLock { state in
            state.inTransaction = open
            guard state.shuttingDown, !open else { return true }
            state.closing = true
            return false
        }
    }

    /// Closes the connection now if no transaction is open; otherwise the read loop closes it after the transaction.
    func shutDown() {
        let closeNow = state.withLock { state in
            state.shuttingDown = true
            guard !state.inTransaction, !state.closing else { return false }
            state.closing = true
            return true
        }
        if closeNow { close(with: Self.shutdownReply(hostname)) }
    }

    /// Sleeps until the idle deadline, and closes the connection with 421 if the client has not spoken since.
    /// Returns when cancelled.
    func run() async {
        while !Task.isCancelled {
            let deadline = state.withLock { state in
                // While `deliver` runs there is no deadline; look again a timeout later.
                (state.busy ? ContinuousClock.now : state.lastActivity) + idleTimeout
            }
            try? await Task.sleep(until: deadline, clock: .continuous)
            let expired = state.withLock { state in
                guard !state.busy, !state.closing, state.lastActivity + idleTimeout <= .now else { return false }
                state.closing = true
                return true
            }
            if expired {
                close(with: "421 4.4.2 \(hostname) Error: timeout exceeded\r\n")
                return
            }
        }
    }

    /// Writes the reply without waiting on a client that may not be reading, then closes.
    private func close(with reply: String) {
        channel.writeAndFlush(ByteBuffer(string: reply), promise: nil)
        channel.close(promise: nil)
    }
}

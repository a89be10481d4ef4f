import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Receives mail over LMTP (RFC 2033) or SMTP (RFC 5321, without AUTH or STARTTLS) and hands each message to
/// `deliver`: the inbound side for bounces that the MTA (Postfix) passes on.
///
/// ```swift
/// let listener = MailListener(host: "127.0.0.1", port: 2525, dialect: .lmtp, hostname: "bounces.example.com",
///                             logger: logger) { delivery in
///     delivery.recipients.map { _ in .accepted }
/// }
/// let group = ServiceGroup(services: [listener], logger: logger)
/// ```
public struct MailListener: Service {
    /// LMTP answers DATA once per recipient; SMTP once per message.
    public enum Dialect: String, Sendable, CaseIterable {
        case lmtp, smtp
    }

    /// One received message: the envelope and the bytes after DATA, dot-unstuffed, with CRLF line endings.
    public struct Delivery: Sendable {
        /// The reverse path; empty for the null sender `<>` that bounces use.
        public var sender: String
        public var recipients: [String]
        public var data: [UInt8]

        public init(sender: String, recipients: [String], data: [UInt8]) {
            self.sender = sender
            self.recipients = recipients
            self.data = data
        }
    }

    /// The answer for one recipient (LMTP gives one reply per recipient after DATA; SMTP gives one reply, the
    /// first non-accepted outcome or 250).
    public enum Outcome: Sendable, Equatable {
        /// `250 2.0.0 Ok`.
        case accepted
        /// `550` with the text, e.g. `"5.1.1 unknown recipient"`; a text without an enhanced code gets `5.0.0`.
        case rejected(String)
        /// `451` with the text, e.g. `"4.3.0 try again later"`; a text without an enhanced code gets `4.0.0`.
        case deferred(String)
    }

    let host: String
    let port: Int
    let settings: MailSession.Settings
    let idleTimeout: Duration
    let maximumConnections: Int
    let logger: Logger
    let onBound: @Sendable (Int) -> Void
    let deliver: @Sendable (Delivery) async -> [Outcome]

    /// - Parameters:
    ///   - port: 0 for any free port; `onBound` is told the one chosen.
    ///   - hostname: the name in the greeting and the LHLO/EHLO reply.
    ///   - maximumMessageSize: larger messages are refused with 552 5.3.4 and never reach `deliver`.
    ///   - maximumRecipients: recipients past this many in one transaction get 452 4.5.3.
    ///   - maximumConnections: sessions open at once (each may hold a message); more are turned away with 421.
    ///   - idleTimeout: a client silent this long gets 421 and is disconnected; time spent in `deliver` does
    ///     not count.
    ///   - onBound: called with the bound port once listening.
    ///   - deliver: one `Outcome` per recipient, in order; missing ones count as `deferred("4.3.0 internal error")`.
    public init(
        host: String, port: Int, dialect: Dialect, hostname: String, maximumMessageSize: Int = 10 << 20,
        maximumRecipients: Int = 100, maximumConnections: Int = 64, idleTimeout: Duration = .seconds(300), logger: Logger,
        onBound: @escaping @Sendable (Int) -> Void = { _ in },
        deliver: @escaping @Sendable (Delivery) async -> [Outcome]
    ) {
        self.host = host
        self.port = port
        settings = .init(
            dialect: dialect, hostname: hostname, maximumMessageSize: maximumMessageSize,
            maximumRecipients: maximumRecipients)
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
        self.logger = logger
        self.onBound = onBound
        self.deliver = deliver
    }

    /// Listens until graceful shutdown or cancellation, then closes the listening socket. On graceful shutdown,
    /// open sessions finish their current transaction and are then closed with 421; idle ones at once.
    public func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(MailLineDecoder()))
                    return try NIOAsyncChannel<MailLine, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let boundPort = server.channel.localAddress?.port ?? port
        logger.info(
            "mail listener started", metadata: ["port": "\(boundPort)", "dialect": "\(settings.dialect.rawValue)"])
        onBound(boundPort)
        let connection = MailConnection(
            settings: settings, idleTimeout: idleTimeout, logger: logger, deliver: deliver)
        let open = OpenConnections()
        let maximumConnections = maximumConnections
        let failure = await withTaskCancellationOrGracefulShutdownHandler {
            await withDiscardingTaskGroup { group -> (any Error)? in
                do {
                    try await server.executeThenClose { clients in
                        for try await client in clients {
                            // Bounded memory: each session may hold a message of maximumMessageSize.
                            guard open.enter(limit: maximumConnections) else {
                                group.addTask { await connection.refuse(client) }
                                continue
                            }
                            group.addTask {
                                await connection.run(client)
                                open.leave()
                            }
                        }
                    }
                    return nil
                } catch {
                    return error
                }
            }
        } onCancelOrGracefulShutdown: {
            server.channel.close(promise: nil)
        }
        if let failure, !Task.isCancelled, !Task.isShuttingDownGracefully {
            logger.error("mail listener failed", metadata: ["port": "\(boundPort)", "error": "\(failure)"])
            throw failure
        }
        logger.info("mail listener stopped", metadata: ["port": "\(boundPort)"])
    }
}

/// How many sessions are open. `Atomic` needs a stable address: a final class holds it.
private final class OpenConnections: Sendable {
    private let count = Atomic<Int>(0)

    /// Counts one more; false (and not counted) when `limit` are open already.
    func enter(limit: Int) -> Bool {
        guard count.add(1, ordering: .relaxed).newValue <= limit else {
            count.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func leave() { count.subtract(1, ordering: .relaxed) }
}

import Foundation
import HeraldCore
import NIOCore
import PostgresNIO

/// Listening for mail other processes queue (`LISTEN herald_queued`), so an idle worker on any host claims it at
/// once instead of at its next poll.
///
/// A thread of its own holds one connection and waits for it to close; notifications arrive on the connection's
/// event loop, so nothing depends on Swift's cooperative pool being free.
public final class QueueNotificationRelay: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false
    private var connection: PostgresConnection?

    /// Stops listening and closes the connection.
    public func cancel() {
        let open = lock.withLock { () -> PostgresConnection? in
            cancelled = true
            return connection
        }
        if let open { PostgresPool.close(open) }
    }

    deinit { cancel() }

    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Records the connection listening now; false (and the connection closed) if cancelled meanwhile.
    func hold(_ connection: PostgresConnection?) -> Bool {
        let keep = lock.withLock { () -> Bool in
            guard !cancelled else { return false }
            self.connection = connection
            return true
        }
        if !keep, let connection { PostgresPool.close(connection) }
        return keep
    }
}

extension PostgresStore {
    /// The channel enqueues notify after queueing mail.
    static let queuedChannel = "herald_queued"

    /// Tells every listening process that mail was queued; PostgreSQL delivers it when the transaction commits,
    /// once however many rows it queued.
    static func announceQueued(_ db: PostgresSession) throws {
        try db.execute("SELECT pg_notify('\(queuedChannel)', '')")
    }

    /// Signals `signal` for every `herald_queued` notification from any process, on a connection of its own.
    ///
    /// A lost connection is opened again after a second (and `signal` fires once, in case mail was queued
    /// meanwhile); the worker's own poll covers the gap.
    public func relayQueueNotifications(to signal: QueueSignal) -> QueueNotificationRelay {
        let relay = QueueNotificationRelay()
        let pool = self.pool
        let thread = Thread.named("herald-listen") {
            var attempt = 0
            while !relay.isCancelled {
                attempt += 1
                if let session = try? pool.connect(id: -attempt), relay.hold(session.connection) {
                    let connection = session.connection
                    // Added on the connection's event loop while it is open (postgres-nio then sends the LISTEN): a
                    // listener handed to a connection the server had just closed was dropped, and postgres-nio traps
                    // when it frees a listener that never ran.
                    let listening = try? connection.eventLoop.submit { () -> Bool in
                        guard !connection.isClosed else { return false }
                        connection.addListener(channel: Self.queuedChannel) { _, _ in signal.signal() }
                        return true
                    }.wait()
                    if listening == true {
                        signal.signal()
                        try? connection.closeFuture.wait()
                    }
                    _ = relay.hold(nil)
                    PostgresPool.close(session.connection)
                }
                guard !relay.isCancelled else { return }
                Thread.sleep(forTimeInterval: 1)
                signal.signal()
            }
        }
        thread.start()
        return relay
    }
}

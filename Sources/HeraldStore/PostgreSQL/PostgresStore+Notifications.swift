import Foundation
import HeraldCore
import Logging
import NIOPosix
import PostgresNIO

/// Listening for mail other processes queue (`LISTEN herald_queued`), so an idle worker on any host claims it at
/// once instead of at its next poll.
public final class QueueNotificationRelay: Sendable {
    private let task: Task<Void, Never>

    init(task: Task<Void, Never>) { self.task = task }

    /// Stops listening.
    public func cancel() { task.cancel() }

    deinit { task.cancel() }
}

extension PostgresStore {
    /// The channel enqueues notify after queueing mail.
    static let queuedChannel = "herald_queued"

    /// Tells every listening process that mail was queued; PostgreSQL delivers it when the transaction commits,
    /// once however many rows it queued.
    static func notifyQueued(_ db: PostgresSession) throws {
        try db.execute("SELECT pg_notify('\(queuedChannel)', '')")
    }

    /// Signals `signal` for every `herald_queued` notification from any process, on a connection of its own.
    ///
    /// A lost connection is opened again after a second (and `signal` fires once, in case mail was queued
    /// meanwhile); the worker's own poll covers the gap.
    public func relayQueueNotifications(to signal: QueueSignal) -> QueueNotificationRelay {
        let configuration = pool.configuration
        let logger = pool.logger
        let task = Task.detached {
            var attempt = 0
            while !Task.isCancelled {
                attempt += 1
                do {
                    let connection = try await PostgresConnection.connect(
                        on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: -attempt, logger: logger)
                    do {
                        try await connection.listen(on: Self.queuedChannel) { notifications in
                            signal.signal()
                            for try await _ in notifications { signal.signal() }
                        }
                    } catch {
                        try? await connection.close()
                        throw error
                    }
                    try? await connection.close()
                } catch {
                    if Task.isCancelled { return }
                }
                try? await Task.sleep(for: .seconds(1))
                signal.signal()
            }
        }
        return QueueNotificationRelay(task: task)
    }
}

import Foundation
import Logging
import ServiceLifecycle

/// The worker as a swift-service-lifecycle `Service`: runs the dispatch loop until graceful
/// shutdown (or cancellation), which finishes and records in-flight sends and hands unsent
/// claimed rows back; with `untilEmpty` it returns once nothing is pending.
///
/// ```swift
/// let group = ServiceGroup(
///     configuration: .init(services: [WorkerService(worker: worker, concurrency: 2)], gracefulShutdownSignals: [.sigterm], logger: logger))
/// try await group.run()
/// ```
public struct WorkerService: Service {
    let worker: Worker
    let concurrency: Int
    let untilEmpty: Bool
    /// Called when the loop stops with an error, before the error leaves `run()`.
    let onFailure: @Sendable (any Error) async -> Void

    public init(
        worker: Worker, concurrency: Int, untilEmpty: Bool = false, onFailure: @escaping @Sendable (any Error) async -> Void = { _ in }
    ) {
        self.worker = worker
        self.concurrency = concurrency
        self.untilEmpty = untilEmpty
        self.onFailure = onFailure
    }

    public func run() async throws {
        let stop = StopSignal()
        do {
            let summary = try await withTaskCancellationHandler {
                try await withGracefulShutdownHandler {
                    try await worker.run(untilEmpty: untilEmpty, concurrency: concurrency, stop: stop)
                } onGracefulShutdown: {
                    worker.logger.info("graceful shutdown: finishing in-flight sends")
                    stop.stop()
                }
            } onCancel: {
                stop.stop()
            }
            worker.logger.info("worker finished: \(summary)", metadata: summary.metadata)
        } catch {
            worker.logger.error("worker failed", metadata: ["error": "\(error)"])
            await onFailure(error)
            throw error
        }
    }
}

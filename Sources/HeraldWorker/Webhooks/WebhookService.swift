import Foundation
import HeraldCore
import HeraldStore
import Logging
import ServiceLifecycle

/// Webhook delivery as a swift-service-lifecycle `Service`: one `WebhookLane` thread per configured endpoint,
/// beside the send loop and never in its way. Graceful shutdown lets each lane finish the POST in flight.
///
/// ```swift
/// let webhooks = WebhookService(configuration: configuration.webhooks, store: store, logger: logger)
/// ```
public struct WebhookService: Service {
    let configuration: HeraldConfiguration.Webhooks
    let store: any WebhookStore
    let logger: Logger

    public init(configuration: HeraldConfiguration.Webhooks, store: any WebhookStore, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
    }

    public func run() async throws {
        let stop = StopSignal()
        let lanes = configuration.endpoints.map {
            WebhookLane(endpoint: $0, configuration: configuration, store: store, logger: logger, stop: stop)
        }
        logger.info("webhook dispatcher started", metadata: ["endpoints": "\(lanes.map(\.endpoint.name).joined(separator: ","))"])
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let group = DispatchGroup()
                    for lane in lanes {
                        group.enter()
                        let thread = Thread.named("herald-webhooks-\(lane.endpoint.name)") {
                            lane.run()
                            group.leave()
                        }
                        thread.start()
                    }
                    group.notify(queue: .global()) { continuation.resume() }
                }
            } onGracefulShutdown: {
                stop.stop()
            }
        } onCancel: {
            stop.stop()
        }
    }
}

import Foundation
import HeraldCore
import HeraldHTTPClient
import HeraldStore
import Logging
import Metrics

/// One endpoint's deliveries, on a thread of its own: claim the due ones with a lease, POST each, record the outcome.
///
/// A failed POST is retried with exponential backoff and jitter (`webhooks.backoffBase` … `backoffCap`) until
/// `webhooks.maxAttempts`, then `dead`. The endpoint counts as down meanwhile: the rest of the batch goes back
/// uncharged, due with the failed one, and the lane waits until then, so a down endpoint costs one probe per
/// backoff and nothing else — never the send loop's time, nor another endpoint's.
///
/// `@unchecked Sendable`: `failures` and `ledgerTrouble` are only touched by the lane's own thread.
final class WebhookLane: @unchecked Sendable {
    let endpoint: HeraldConfiguration.Webhooks.Endpoint
    private let store: any WebhookStore
    private let poster: WebhookPoster
    private let retry: RetryPolicy
    private let maxAttempts: Int
    private let lease: TimeInterval
    private let logger: Logger
    private let stop: StopSignal
    /// `herald_webhook_posts_total{endpoint, outcome}`: POSTs by how they ended (`delivered`, `retry`, `dead`).
    private let posts: [String: Counter]
    private var failures = 0
    private var ledgerTrouble = false
    static let batchSize = 16
    static let idlePoll: TimeInterval = 0.5

    init(
        endpoint: HeraldConfiguration.Webhooks.Endpoint, configuration: HeraldConfiguration.Webhooks, store: any WebhookStore, logger: Logger,
        stop: StopSignal
    ) {
        self.endpoint = endpoint
        self.store = store
        self.poster = WebhookPoster(timeout: configuration.timeout)
        self.retry = RetryPolicy(base: configuration.backoffBase, cap: configuration.backoffCap)
        self.maxAttempts = configuration.maxAttempts
        // Every POST of a batch may take the whole timeout; the lease outlives them all.
        self.lease = Double(Self.batchSize) * (configuration.timeout + 1) + 30
        self.logger = logger
        self.stop = stop
        posts = Dictionary(
            uniqueKeysWithValues: ["delivered", "retry", "dead"].map {
                ($0, Counter(label: "herald_webhook_posts_total", dimensions: [("endpoint", endpoint.name), ("outcome", $0)]))
            })
    }

    func run() {
        while !stop.isStopped {
            let batch: [WebhookDelivery]
            do {
                batch = try store.claimWebhookDeliveries(endpoint: endpoint.name, limit: Self.batchSize, lease: lease, now: Date())
                if ledgerTrouble {
                    ledgerTrouble = false
                    logger.info("webhook deliveries resumed: the ledger is available again", metadata: ["endpoint": "\(endpoint.name)"])
                }
            } catch {
                if !ledgerTrouble {
                    ledgerTrouble = true
                    logger.warning("webhook deliveries wait for the ledger", metadata: ["endpoint": "\(endpoint.name)", "error": "\(error)"])
                }
                stop.wait(1)
                continue
            }
            guard !batch.isEmpty else {
                stop.wait(Self.idlePoll)
                continue
            }
            send(batch)
        }
    }

    private func send(_ batch: [WebhookDelivery]) {
        for (index, delivery) in batch.enumerated() {
            let rest = Array(batch[(index + 1)...])
            guard !stop.isStopped else { return giveBack([delivery] + rest, next: Date()) }
            let outcome = attempt(delivery)
            record(delivery, outcome)
            switch outcome.decision {
            case .delivered:
                posts["delivered"]?.increment()
                if failures > 0 {
                    logger.info("webhook endpoint reachable again", metadata: ["endpoint": "\(endpoint.name)", "failures": "\(failures)"])
                }
                failures = 0
            case .retry(let next):
                posts["retry"]?.increment()
                failures += 1
                giveBack(rest, next: next)
                stop.wait(max(0, next.timeIntervalSinceNow))
                return
            case .dead:
                posts["dead"]?.increment()
                failures += 1
                let next = Date().addingTimeInterval(retry.delay(afterAttempt: failures))
                giveBack(rest, next: next)
                stop.wait(max(0, next.timeIntervalSinceNow))
                return
            }
        }
    }

    private func attempt(_ delivery: WebhookDelivery) -> WebhookOutcome {
        let problem: String
        var status: Int?
        do {
            let answer = try poster.post(
                endpoint, body: delivery.payload, eventID: delivery.eventID, type: delivery.event, delivery: delivery.id,
                attempt: delivery.attempts)
            if answer.isSuccess { return WebhookOutcome(decision: .delivered, status: answer.status, error: nil, at: Date()) }
            status = answer.status
            problem = "HTTP \(answer.status)" + (answer.excerpt.isEmpty ? "" : ": \(answer.excerpt)")
        } catch let error as HeraldError {
            problem = error.detail
        } catch {
            problem = "\(error)"
        }
        let now = Date()
        let metadata: Logger.Metadata = [
            "endpoint": "\(endpoint.name)", "event": "\(delivery.event)", "eventId": "\(delivery.eventID)", "delivery": "\(delivery.id)",
            "attempt": "\(delivery.attempts)", "error": "\(problem)",
        ]
        guard delivery.attempts < maxAttempts else {
            logger.error("webhook delivery dead: attempts exhausted (herald webhooks replay requeues it)", metadata: metadata)
            return WebhookOutcome(decision: .dead, status: status, error: problem, at: now)
        }
        let next = now.addingTimeInterval(retry.delay(afterAttempt: delivery.attempts))
        logger.warning("webhook delivery failed; retrying", metadata: metadata.merging(["next": "\(next.iso8601)"]) { $1 })
        return WebhookOutcome(decision: .retry(at: next), status: status, error: problem, at: now)
    }

    /// Records an outcome, trying a few times through a busy ledger; past that the lease runs out and the
    /// delivery is posted again (at least once, never lost).
    private func record(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) {
        for attempt in 1...5 {
            do {
                return try store.recordWebhookDelivery(delivery, outcome)
            } catch {
                guard attempt < 5 else {
                    logger.warning(
                        "webhook outcome not recorded; the delivery will be posted again",
                        metadata: ["endpoint": "\(endpoint.name)", "delivery": "\(delivery.id)", "error": "\(error)"])
                    return
                }
                Thread.sleep(forTimeInterval: 0.2 * Double(attempt))
            }
        }
    }

    private func giveBack(_ deliveries: [WebhookDelivery], next: Date) {
        do { try store.releaseWebhookDeliveries(deliveries, next: next) } catch {
            logger.debug("webhook deliveries not given back; their lease will run out", metadata: ["error": "\(error)"])
        }
    }
}

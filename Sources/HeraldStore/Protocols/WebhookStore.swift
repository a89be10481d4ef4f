import Foundation
import HeraldCore

/// The webhooks' own outbox: deliveries are written by the state changes themselves (see `WebhookRouting`);
/// a dispatcher claims due ones with a lease, POSTs them and records each outcome.
public protocol WebhookStore: Sendable {
    /// Claims up to `limit` due deliveries of `endpoint` until `lease` from now, counting an attempt for each;
    /// another process claims them only once that lease runs out.
    func claimWebhookDeliveries(endpoint: String, limit: Int, lease: TimeInterval, now: Date) throws -> [WebhookDelivery]

    /// Records a POST's outcome, only while the claim still holds the delivery (same lease).
    func recordWebhookDelivery(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome) throws

    /// Gives claimed deliveries back uncharged, due at `next` (an endpoint that just failed is not hammered).
    func releaseWebhookDeliveries(_ deliveries: [WebhookDelivery], next: Date) throws

    /// Counts and the last error of every endpoint that has deliveries.
    func webhookSummaries() throws -> [WebhookEndpointSummary]

    /// The `limit` deliveries whose last POST failed and that are not delivered (queued again or dead), the latest
    /// attempt first.
    func recentWebhookFailures(limit: Int) throws -> [WebhookFailure]

    /// Queues the matching deliveries again with a fresh attempt budget, due now; returns how many.
    func replayWebhookDeliveries(_ filter: WebhookReplayFilter, now: Date) throws -> Int
}

import Foundation
import HeraldCore
import HeraldHTTPClient
import HeraldStore

/// One configured endpoint beside what the ledger holds for it.
@dynamicMemberLookup
public struct WebhookEndpointReport: Sendable, Hashable {
    public let endpoint: String
    /// Nil for an endpoint that has deliveries but is no longer configured (nothing posts them).
    public let url: String?
    public let events: [String]
    /// Its deliveries' counts, oldest queued and last error (`report.queued`, `report.lastError`, …).
    public let deliveries: WebhookEndpointSummary

    public subscript<Value>(dynamicMember keyPath: KeyPath<WebhookEndpointSummary, Value>) -> Value { deliveries[keyPath: keyPath] }
}

/// Webhooks from an operator's side: what each endpoint has been told, a test POST, and replays.
///
/// ```swift
/// let answer = try actions.webhooks.testWebhook(named: "crm")
/// ```
public final class WebhooksService: Sendable {
    let store: any HeraldStore
    /// The configured endpoints (`webhooks:`).
    let webhooks: HeraldConfiguration.Webhooks

    init(store: any HeraldStore, configuration webhooks: HeraldConfiguration.Webhooks) {
        self.store = store
        self.webhooks = webhooks
    }
}

extension WebhooksService {
    /// Every configured endpoint, and any the ledger still holds deliveries for, with counts and the last error.
    public func webhookReports() throws -> [WebhookEndpointReport] {
        let summaries = Dictionary(try store.webhookSummaries().map { ($0.endpoint, $0) }, uniquingKeysWith: { $1 })
        let names = Set(webhooks.endpoints.map(\.name)).union(summaries.keys).sorted()
        return names.map { name in
            let endpoint = webhooks.endpoint(named: name)
            let none = WebhookEndpointSummary(
                endpoint: name, queued: 0, delivered: 0, dead: 0, oldestQueuedAt: nil, lastDeliveredAt: nil, lastError: nil, lastErrorAt: nil)
            return WebhookEndpointReport(
                endpoint: name, url: endpoint?.url, events: endpoint.map { $0.events.map(\.rawValue).sorted() } ?? [],
                deliveries: summaries[name] ?? none)
        }
    }

    /// The latest deliveries whose last POST failed and that are not delivered, with the endpoint's answer.
    public func recentWebhookFailures(limit: Int = 50) throws -> [WebhookFailure] {
        try store.recentWebhookFailures(limit: max(1, min(limit, 1000)))
    }

    /// POSTs a signed `test` event to endpoint `name` now, outside the ledger, and returns its answer.
    ///
    /// - Throws: `ARGUMENT_ERROR` for an endpoint that is not configured; `UNAVAILABLE` when it cannot be reached.
    public func testWebhook(named name: String, now: Date = Date()) throws -> WebhookPoster.Answer {
        guard let endpoint = webhooks.endpoint(named: name) else {
            let known = webhooks.endpoints.map(\.name).joined(separator: ", ")
            throw HeraldError(.argumentError, "no webhook endpoint '\(name)' is configured (configured: \(known.isEmpty ? "none" : known))")
        }
        let id = UUID().uuidString.lowercased()
        let body = TestEvent(id: id, type: "test", occurredAt: now.iso8601, endpoint: name)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(body), as: UTF8.self)
        return try WebhookPoster(timeout: webhooks.timeout).post(
            endpoint, body: json, eventID: id, type: "test", delivery: nil, attempt: 1, now: now)
    }

    /// Queues matching deliveries again, due now, with a fresh attempt budget; returns how many.
    public func replayWebhooks(_ filter: WebhookReplayFilter, now: Date = Date()) throws -> Int {
        try store.replayWebhookDeliveries(filter, now: now)
    }

    private struct TestEvent: Encodable {
        let id: String
        let type: String
        let occurredAt: String
        let endpoint: String
    }
}

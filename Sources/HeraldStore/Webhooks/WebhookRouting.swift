import HeraldCore

/// Which endpoints listen to which events, known to the store when it opens: a state change writes one
/// `webhook_deliveries` row per listening endpoint in its own transaction, and nothing at all when none listens.
///
/// ```swift
/// let routing = WebhookRouting(["crm": [.bounced], "ops": Set(WebhookEvent.allCases)])
/// let store = try SQLiteStore(path: "var/herald.sqlite", webhooks: routing)
/// ```
public struct WebhookRouting: Sendable, Hashable {
    private let listeners: [WebhookEvent: [String]]

    /// No endpoint: every state change skips the webhook insert.
    public static let none = WebhookRouting([:])

    public init(_ subscriptions: [String: Set<WebhookEvent>]) {
        var listeners: [WebhookEvent: [String]] = [:]
        for (endpoint, events) in subscriptions.sorted(by: { $0.key < $1.key }) {
            for event in events { listeners[event, default: []].append(endpoint) }
        }
        self.listeners = listeners
    }

    /// The endpoints that listen to `event`, by name.
    public func endpoints(for event: WebhookEvent) -> [String] { listeners[event] ?? [] }

    public func listens(to event: WebhookEvent) -> Bool { listeners[event] != nil }
}

extension WebhookRouting {
    /// The subscriptions `webhooks.<name>.events` configure.
    public init(_ webhooks: HeraldConfiguration.Webhooks) {
        self.init(Dictionary(webhooks.endpoints.map { ($0.name, $0.events) }, uniquingKeysWith: { $0.union($1) }))
    }
}

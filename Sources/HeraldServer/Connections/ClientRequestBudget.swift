import NIOConcurrencyHelpers

/// How many requests each client has in flight across all its connections, and who waits for one to end.
///
/// A client is an IPv4 address or an IPv6 /64, as `ConnectionAdmission` counts it; trusted proxies are not
/// counted. Past `perClient` requests in flight, a connection of that client stops reading (`ConnectionGuard`)
/// until one of its requests ends, so one client's connections cannot take all request processing, however
/// many it opens and however deep it pipelines. Waiting connections are woken one per ended request, in the
/// order they began to wait; one that no longer needs its turn (closed meanwhile) passes it on.
///
/// ```swift
/// let budget = ClientRequestBudget(perClient: 32)
/// if budget.mayStart("203.0.113.7", orWake: { resume() }) { … read the next request … }
/// budget.started("203.0.113.7")   // its head is in
/// budget.ended("203.0.113.7")     // its answer is out: wakes a waiting connection
/// ```
final class ClientRequestBudget: Sendable {
    /// Most requests in flight at once from one client; 0 for no cap.
    let perClient: Int

    private struct Client {
        var inFlight = 0
        var waiting: [@Sendable () -> Void] = []
    }

    private let clients = NIOLockedValueBox([String: Client]())

    init(perClient: Int) {
        self.perClient = perClient
    }

    /// Whether the client may begin another request now. If not, `wake` is called once, on whatever thread
    /// ends one of its requests, and the caller asks again then.
    func mayStart(_ client: String, orWake wake: @escaping @Sendable () -> Void) -> Bool {
        guard perClient > 0 else { return true }
        return clients.withLockedValue { clients in
            if clients[client, default: Client()].inFlight < perClient { return true }
            clients[client, default: Client()].waiting.append(wake)
            return false
        }
    }

    /// A request of the client has begun (its head is in).
    func started(_ client: String) {
        guard perClient > 0 else { return }
        clients.withLockedValue { $0[client, default: Client()].inFlight += 1 }
    }

    /// `count` requests of the client have ended (answered, or their connection closed): as many waiting
    /// connections are woken.
    func ended(_ client: String, count: Int = 1) {
        guard perClient > 0, count > 0 else { return }
        let woken: [@Sendable () -> Void] = clients.withLockedValue { clients in
            guard var entry = clients[client] else { return [] }
            entry.inFlight = max(0, entry.inFlight - count)
            let woken = Array(entry.waiting.prefix(count))
            entry.waiting.removeFirst(woken.count)
            clients[client] = entry.inFlight == 0 && entry.waiting.isEmpty ? nil : entry
            return woken
        }
        for wake in woken { wake() }
    }

    /// A connection was woken but begins no request: the next waiting connection gets the turn, if any is free.
    func passOn(_ client: String) {
        guard perClient > 0 else { return }
        let woken: (@Sendable () -> Void)? = clients.withLockedValue { clients in
            guard var entry = clients[client], entry.inFlight < perClient, !entry.waiting.isEmpty else { return nil }
            let wake = entry.waiting.removeFirst()
            clients[client] = entry.inFlight == 0 && entry.waiting.isEmpty ? nil : entry
            return wake
        }
        woken?()
    }
}

import Foundation
import HeraldCore
import Synchronization

/// Token buckets per client network (IPv4 address, IPv6 /64 or as configured) — or per any other key, such as an account's
/// address (`keyed: .verbatim`) — in this process's memory only.
///
/// Each rule is a bucket of `capacity` tokens refilled at `perSecond`; a request is admitted when every
/// bucket holds a token, and then takes one from each. At most `maxClients` networks are tracked: past
/// that, the ones whose buckets have refilled are forgotten, then the longest idle.
///
/// ```swift
/// let limiter = ClientLimiter(rules: [.init(capacity: 20, perMinute: 20), .init(capacity: 500, perHour: 500)])
/// limiter.take("203.0.113.7")   // true until the burst is spent
/// ```
public final class ClientLimiter: Sendable {
    public struct Rule: Sendable, Hashable {
        public let capacity: Double
        public let perSecond: Double

        public init(capacity: Int, perMinute: Int) {
            self.capacity = Double(capacity)
            perSecond = Double(perMinute) / 60
        }

        public init(capacity: Int, perHour: Int) {
            self.capacity = Double(capacity)
            perSecond = Double(perHour) / 3600
        }
    }

    private struct Buckets {
        var tokens: [Double]
        var updated: Date
    }

    /// What a limiter counts under.
    public enum Keying: Sendable {
        /// The client network of an address (IPv4 address, IPv6 `ipv6Prefix`); text that is no address is admitted.
        case network
        /// The text itself (e.g. a lower-cased email address).
        case verbatim
    }

    public let rules: [Rule]
    let maxClients: Int
    let keying: Keying
    /// The prefix an IPv6 client network has (`limits.ipv6ClientPrefix`), for `.network` keying.
    let ipv6Prefix: Int
    private let clients = Mutex<[String: Buckets]>([:])

    /// Rules with a capacity or rate of 0 are off; with none left the limiter admits everyone.
    public init(
        rules: [Rule], maxClients: Int = 100_000, keyed keying: Keying = .network,
        ipv6Prefix: Int = IPNetwork.defaultIPv6ClientPrefix
    ) {
        self.rules = rules.filter { $0.capacity > 0 && $0.perSecond > 0 }
        self.maxClients = max(1, maxClients)
        self.keying = keying
        self.ipv6Prefix = ipv6Prefix
    }

    /// Takes a token from each of the client's buckets; false (and nothing taken) when one is empty.
    /// An address that cannot be parsed is admitted.
    public func take(_ address: String, now: Date = Date()) -> Bool {
        admit(address, take: true, now: now)
    }

    /// Whether the client would be admitted now, taking nothing.
    public func allows(_ address: String, now: Date = Date()) -> Bool {
        admit(address, take: false, now: now)
    }

    /// How many networks are tracked.
    public var trackedClients: Int { clients.withLock { $0.count } }

    private func admit(_ address: String, take: Bool, now: Date) -> Bool {
        let key: String?
        switch keying {
        case .network: key = IPNetwork.client(address, ipv6Prefix: ipv6Prefix)?.description
        case .verbatim: key = address
        }
        guard !rules.isEmpty, let network = key else { return true }
        return clients.withLock { clients in
            var buckets = clients[network].map { refilled($0, now: now) } ?? Buckets(tokens: rules.map(\.capacity), updated: now)
            guard buckets.tokens.allSatisfy({ $0 >= 1 }) else {
                if take { clients[network] = buckets }
                return false
            }
            guard take else { return true }
            buckets.tokens = buckets.tokens.map { $0 - 1 }
            if clients[network] == nil, clients.count >= maxClients { evict(&clients, now: now) }
            clients[network] = buckets
            return true
        }
    }

    private func refilled(_ buckets: Buckets, now: Date) -> Buckets {
        let elapsed = max(0, now.timeIntervalSince(buckets.updated))
        let tokens = zip(buckets.tokens, rules).map { min($1.capacity, $0 + elapsed * $1.perSecond) }
        return Buckets(tokens: tokens, updated: now)
    }

    /// Forgets clients whose buckets are full again (they would start full anyway), then the longest idle half.
    private func evict(_ clients: inout [String: Buckets], now: Date) {
        clients = clients.filter { _, buckets in
            zip(refilled(buckets, now: now).tokens, rules).contains { $0 < $1.capacity }
        }
        guard clients.count >= maxClients else { return }
        let idle = clients.sorted { $0.value.updated < $1.value.updated }.prefix(clients.count / 2 + 1)
        for (network, _) in idle { clients[network] = nil }
    }
}

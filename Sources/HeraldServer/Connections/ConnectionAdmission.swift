import HeraldCore
import NIOConcurrencyHelpers
import NIOCore

/// How many HTTP connections Herald holds open, in all and per client, and whether one more may come in.
///
/// A client is an IPv4 address or an IPv6 network (`limits.ipv6ClientPrefix`: /64 by default, one host's privacy
/// addresses). Peers listed as trusted proxies are exempt from the per-client cap, since every user behind them
/// shares their address; the total cap still holds. A refused connection is answered by `ConnectionGuard` and closed.
///
/// Idle connections (keep-alives between requests, or connected and silent) count like busy ones, toward both
/// caps, but give way under pressure, as nginx reuses its idle connections when it runs out: a connection that
/// finds the total cap reached closes the idle connection of the client holding the most connections (the longest
/// idle of those) and takes its place; only when none is idle is it refused. So keep-alives held open by a few
/// clients can never fill the server. A client at its own cap is refused, idle connections or not.
///
/// ```swift
/// let admission = ConnectionAdmission(limits: .init(total: 1000, perClient: 64))
/// guard case .success(let ticket) = admission.admit(peer: channel.remoteAddress) else { … refuse … }
/// admission.idle(ticket) { … close the connection if it is still idle … }   // between requests
/// admission.busy(ticket)                                                   // a request began
/// channel.closeFuture.whenComplete { _ in admission.release(ticket) }
/// ```
final class ConnectionAdmission: Sendable {
    struct Limits: Sendable {
        /// Most connections open at once; 0 for no cap.
        var total: Int
        /// Most connections open at once from one client; 0 for no cap.
        var perClient: Int
        /// Peers exempt from `perClient` (reverse proxies, `limits.trustedProxies`).
        var trustedProxies: [IPNetwork] = []
        /// The prefix an IPv6 client has (`limits.ipv6ClientPrefix`).
        var ipv6Prefix = IPNetwork.defaultIPv6ClientPrefix
    }

    /// Why a connection was refused, which decides its answer.
    enum Refusal: Error, Equatable {
        /// `server.maxConnections` reached and no connection idle: 503.
        case full
        /// `server.maxConnectionsPerClient` reached: 429.
        case clientFull
    }

    /// An admitted connection; give it back with `release`.
    struct Ticket: Sendable {
        let id: UInt64
        /// The client the connection counts under; nil for a trusted proxy.
        let client: String?
    }

    /// Closes an idle connection that must give way; called once, on any thread, with no lock held.
    typealias Eviction = @Sendable () -> Void

    private struct Idle {
        let client: String?
        /// When it became idle, in `Counts.clock` ticks: the smallest is the longest idle.
        let since: UInt64
        let evict: Eviction
    }

    private struct Counts {
        var total = 0
        var byClient: [String: Int] = [:]
        var issued: UInt64 = 0
        var clock: UInt64 = 0
        var idle: [UInt64: Idle] = [:]
        /// Tickets already counted out because their connection was evicted (its close is on its way).
        var evicted: Set<UInt64> = []
    }

    let limits: Limits
    private let counts = NIOLockedValueBox(Counts())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Counts a new connection from `peer` in, closing an idle connection to make room if it must, or says why
    /// it may not come in.
    func admit(peer: SocketAddress?) -> Result<Ticket, Refusal> {
        let trusted = peer?.ipAddress.map { ip in limits.trustedProxies.contains { $0.contains(ip) } } ?? false
        let client = trusted ? nil : peer.flatMap { Self.client(of: $0, ipv6Prefix: limits.ipv6Prefix) }
        var eviction: Eviction?
        let result = counts.withLockedValue { counts -> Result<Ticket, Refusal> in
            if let client, limits.perClient > 0, counts.byClient[client, default: 0] >= limits.perClient {
                return .failure(.clientFull)
            }
            if limits.total > 0, counts.total >= limits.total {
                guard let id = Self.idleToClose(counts) else { return .failure(.full) }
                eviction = Self.evict(id, &counts)
            }
            counts.total += 1
            if let client { counts.byClient[client, default: 0] += 1 }
            counts.issued += 1
            return .success(Ticket(id: counts.issued, client: client))
        }
        eviction?()
        return result
    }

    /// The connection waits for a request (or has just connected): under pressure it may be closed with `evict`.
    func idle(_ ticket: Ticket, evict: @escaping Eviction) {
        counts.withLockedValue { counts in
            guard !counts.evicted.contains(ticket.id) else { return }
            counts.clock += 1
            counts.idle[ticket.id] = Idle(client: ticket.client, since: counts.clock, evict: evict)
        }
    }

    /// The connection's next request began, or it is closing: it no longer gives way.
    func busy(_ ticket: Ticket) {
        _ = counts.withLockedValue { $0.idle.removeValue(forKey: ticket.id) }
    }

    /// Gives back what `admit` counted (nothing more if the connection was evicted: that counted it out).
    func release(_ ticket: Ticket) {
        counts.withLockedValue { counts in
            counts.idle[ticket.id] = nil
            if counts.evicted.remove(ticket.id) != nil { return }
            Self.countOut(ticket.client, &counts)
        }
    }

    /// Connections open now, and how many of them are idle.
    var open: (total: Int, idle: Int) { counts.withLockedValue { ($0.total, $0.idle.count) } }

    /// The key a peer is counted under: its IPv4 address, or its IPv6 network.
    static func client(of peer: SocketAddress, ipv6Prefix: Int = IPNetwork.defaultIPv6ClientPrefix) -> String? {
        peer.ipAddress.flatMap { IPNetwork.client($0, ipv6Prefix: ipv6Prefix) }?.description
    }

    /// The idle connection of the client holding the most connections, the longest idle of its; a trusted
    /// proxy's connections (shared by everyone behind it) go last.
    private static func idleToClose(_ counts: Counts) -> UInt64? {
        counts.idle.min { a, b in
            let heldA = a.value.client.map { counts.byClient[$0, default: 0] } ?? 0
            let heldB = b.value.client.map { counts.byClient[$0, default: 0] } ?? 0
            return heldA != heldB ? heldA > heldB : a.value.since < b.value.since
        }?.key
    }

    /// Counts an idle connection out now and hands back its close.
    private static func evict(_ id: UInt64, _ counts: inout Counts) -> Eviction {
        let idle = counts.idle.removeValue(forKey: id)!
        counts.evicted.insert(id)
        countOut(idle.client, &counts)
        return idle.evict
    }

    private static func countOut(_ client: String?, _ counts: inout Counts) {
        counts.total -= 1
        guard let client else { return }
        let left = counts.byClient[client, default: 1] - 1
        counts.byClient[client] = left > 0 ? left : nil
    }
}

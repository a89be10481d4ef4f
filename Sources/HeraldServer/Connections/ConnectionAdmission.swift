import HeraldCore
import NIOConcurrencyHelpers
import NIOCore

/// How many HTTP connections Herald holds open, in all and per client, and whether one more may come in.
///
/// A client is an IPv4 address or an IPv6 /64 (one host's privacy addresses are one client). Peers listed
/// as trusted proxies are exempt from the per-client cap, since every user behind them shares their address;
/// the total cap still holds. A refused connection is answered by `ConnectionGuard` and closed.
///
/// ```swift
/// let admission = ConnectionAdmission(limits: .init(total: 1000, perClient: 64))
/// guard let ticket = admission.admit(peer: channel.remoteAddress) else { … refuse … }
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
    }

    /// Why a connection was refused, which decides its answer.
    enum Refusal: Error, Equatable {
        /// `server.maxConnections` reached: 503.
        case full
        /// `server.maxConnectionsPerClient` reached: 429.
        case clientFull
    }

    /// An admitted connection; give it back with `release`.
    struct Ticket: Sendable {
        /// The client the connection counts under; nil for a trusted proxy.
        let client: String?
    }

    private struct Counts {
        var total = 0
        var byClient: [String: Int] = [:]
    }

    let limits: Limits
    private let counts = NIOLockedValueBox(Counts())

    init(limits: Limits) {
        self.limits = limits
    }

    /// Counts a new connection from `peer` in, or says why it may not come in.
    func admit(peer: SocketAddress?) -> Result<Ticket, Refusal> {
        let trusted = peer?.ipAddress.map { ip in limits.trustedProxies.contains { $0.contains(ip) } } ?? false
        let client = trusted ? nil : peer.flatMap(Self.client(of:))
        return counts.withLockedValue { counts in
            if limits.total > 0, counts.total >= limits.total { return .failure(.full) }
            if let client, limits.perClient > 0, counts.byClient[client, default: 0] >= limits.perClient {
                return .failure(.clientFull)
            }
            counts.total += 1
            if let client { counts.byClient[client, default: 0] += 1 }
            return .success(Ticket(client: client))
        }
    }

    /// Gives back what `admit` counted.
    func release(_ ticket: Ticket) {
        counts.withLockedValue { counts in
            counts.total -= 1
            guard let client = ticket.client else { return }
            let left = counts.byClient[client, default: 1] - 1
            counts.byClient[client] = left > 0 ? left : nil
        }
    }

    /// The key a peer is counted under: its IPv4 address, or its IPv6 /64.
    static func client(of peer: SocketAddress) -> String? {
        peer.ipAddress.flatMap(IPNetwork.client)?.description
    }
}

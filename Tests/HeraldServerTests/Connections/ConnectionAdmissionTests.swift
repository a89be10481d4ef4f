import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import HeraldServer

@Suite struct ConnectionAdmissionTests {
    /// Records which connections were told to give way, in order.
    final class Evictions: Sendable {
        private let evicted = NIOLockedValueBox([String]())
        var names: [String] { evicted.withLockedValue { $0 } }
        func evict(_ name: String) -> @Sendable () -> Void { { self.evicted.withLockedValue { $0.append(name) } } }
    }

    func peer(_ address: String) throws -> SocketAddress { try SocketAddress(ipAddress: address, port: 40000) }

    func admit(_ admission: ConnectionAdmission, _ address: String) throws -> ConnectionAdmission.Ticket? {
        try? admission.admit(peer: peer(address)).get()
    }

    func refusal(_ admission: ConnectionAdmission, _ address: String) throws -> ConnectionAdmission.Refusal? {
        if case .failure(let refusal) = admission.admit(peer: try peer(address)) { return refusal }
        return nil
    }

    @Test func aFullServerClosesTheIdleConnectionOfTheClientHoldingMostAndNeverABusyOne() throws {
        let admission = ConnectionAdmission(limits: .init(total: 4, perClient: 0))
        let evictions = Evictions()
        let a1 = try #require(try admit(admission, "192.0.2.1"))
        let a2 = try #require(try admit(admission, "192.0.2.1"))
        let b1 = try #require(try admit(admission, "192.0.2.2"))
        let a3 = try #require(try admit(admission, "192.0.2.1"))
        // Busy connections only: the newcomer is refused.
        #expect(try refusal(admission, "192.0.2.9") == .full)
        admission.idle(b1, evict: evictions.evict("b1"))
        admission.idle(a2, evict: evictions.evict("a2"))
        admission.idle(a1, evict: evictions.evict("a1"))
        // 192.0.2.1 holds three: its longest idle connection (a2) gives way, not b1, idle longer but of a smaller holder.
        let c1 = try #require(try admit(admission, "192.0.2.3"))
        #expect(evictions.names == ["a2"])
        #expect(admission.open == (total: 4, idle: 2))
        // The evicted connection's close counts nothing out twice.
        admission.release(a2)
        #expect(admission.open == (total: 4, idle: 2))
        // Now 192.0.2.1 and .2 hold two and one: a1 goes next; a connection that became busy again is spared.
        admission.busy(a1)
        _ = try #require(try admit(admission, "192.0.2.4"))
        #expect(evictions.names == ["a2", "b1"])
        #expect(try refusal(admission, "192.0.2.5") == .full)
        for ticket in [a1, a3, c1] { admission.release(ticket) }
        #expect(admission.open == (total: 1, idle: 0))
    }

    @Test func aClientAtItsCapIsRefusedWhateverItsIdleConnections() throws {
        let admission = ConnectionAdmission(limits: .init(total: 0, perClient: 2))
        let evictions = Evictions()
        for _ in 0..<2 {
            admission.idle(try #require(try admit(admission, "192.0.2.1")), evict: evictions.evict("idle"))
        }
        #expect(try refusal(admission, "192.0.2.1") == .clientFull)
        #expect(evictions.names.isEmpty)
    }

    @Test func ipv6ClientsAreCountedByTheConfiguredPrefix() throws {
        let admission = ConnectionAdmission(limits: .init(total: 0, perClient: 1, ipv6Prefix: 48))
        _ = try #require(try admit(admission, "2001:db8:1:1::1"))
        #expect(try refusal(admission, "2001:db8:1:2::1") == .clientFull)
        #expect(try admit(admission, "2001:db8:2:1::1") != nil)
        let byDefault = ConnectionAdmission(limits: .init(total: 0, perClient: 1))
        _ = try #require(try admit(byDefault, "2001:db8:1:1::1"))
        #expect(try admit(byDefault, "2001:db8:1:2::1") != nil)
    }
}

import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import HeraldServer

@Suite struct ClientRequestBudgetTests {
    /// Records which waiting connections were woken, in order.
    final class Wakes: Sendable {
        private let woken = NIOLockedValueBox([String]())
        var names: [String] { woken.withLockedValue { $0 } }
        func waker(_ name: String) -> @Sendable () -> Void { { self.woken.withLockedValue { $0.append(name) } } }
    }

    /// `mayStart` outside `#expect`, whose expansion cannot pass a closure on.
    func admits(_ budget: ClientRequestBudget, _ client: String, orWake wake: @escaping @Sendable () -> Void = {}) -> Bool {
        budget.mayStart(client, orWake: wake)
    }

    @Test func aClientPastItsCapWaitsAndIsWokenInTurnAsItsRequestsEnd() {
        let budget = ClientRequestBudget(perClient: 2)
        let wakes = Wakes()
        for _ in 0..<2 {
            #expect(admits(budget, "192.0.2.1", orWake: wakes.waker("never")))
            budget.started("192.0.2.1")
        }
        #expect(!admits(budget, "192.0.2.1", orWake: wakes.waker("first")))
        #expect(!admits(budget, "192.0.2.1", orWake: wakes.waker("second")))
        // Another client is not held back by this one.
        #expect(admits(budget, "192.0.2.2", orWake: wakes.waker("other")))
        budget.ended("192.0.2.1")
        #expect(wakes.names == ["first"])
        budget.ended("192.0.2.1")
        #expect(wakes.names == ["first", "second"])
    }

    @Test func aWokenConnectionThatBeginsNothingPassesItsTurnOn() {
        let budget = ClientRequestBudget(perClient: 1)
        let wakes = Wakes()
        budget.started("192.0.2.1")
        #expect(!admits(budget, "192.0.2.1", orWake: wakes.waker("closed")))
        #expect(!admits(budget, "192.0.2.1", orWake: wakes.waker("open")))
        budget.ended("192.0.2.1")
        #expect(wakes.names == ["closed"])
        budget.passOn("192.0.2.1")
        #expect(wakes.names == ["closed", "open"])
    }

    @Test func aClosedConnectionGivesBackEverythingItHadInFlight() {
        let budget = ClientRequestBudget(perClient: 3)
        for _ in 0..<3 { budget.started("192.0.2.1") }
        #expect(!admits(budget, "192.0.2.1"))
        budget.ended("192.0.2.1", count: 3)
        #expect(admits(budget, "192.0.2.1"))
    }

    @Test func zeroMeansNoCap() {
        let budget = ClientRequestBudget(perClient: 0)
        for _ in 0..<1000 { budget.started("192.0.2.1") }
        #expect(admits(budget, "192.0.2.1"))
    }

    @Test func headLengthEndsAtTheFirstBlankLine() {
        let two = ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
        #expect(ConnectionGuard.headLength(in: two) == 27)
        #expect(ConnectionGuard.headLength(in: ByteBuffer(string: "GET / HTTP/1.1\r\nHost: x\r\n")) == nil)
    }
}

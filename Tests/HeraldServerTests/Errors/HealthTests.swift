import Foundation
import Testing

@testable import HeraldServer

/// `/health` tells the truth on every `herald serve`, with or without a worker.
@Suite struct HealthTests {
    @Test func requestsThatFindTheLedgerUnavailableMakeHealthUnavailableOneEpisodeAtATime() {
        let health = Health()
        #expect(HealthReply(health).status == "ok")
        #expect(health.ledgerUnavailable("database or disk is full"), "the first refusal begins an episode (logged)")
        #expect(!health.ledgerUnavailable("database or disk is full"), "later ones are the same episode (not logged)")
        let reply = HealthReply(health)
        #expect(reply.status == "unavailable" && reply.error == "ledger: database or disk is full" && reply.httpStatus == .serviceUnavailable)
        #expect(health.shouldProbe())
        #expect(!health.shouldProbe(), "at most one probe a second")
        #expect(health.ledgerAvailable() != nil)
        #expect(HealthReply(health).status == "ok")
        #expect(health.ledgerAvailable() == nil)
        #expect(!health.shouldProbe(), "nothing to probe while the ledger commits")
    }

    @Test func theWorkersOwnWaitComesFirst() {
        let health = Health()
        health.setUnavailable("ledger: database is locked")
        _ = health.ledgerUnavailable("database or disk is full")
        #expect(HealthReply(health).error == "ledger: database is locked")
    }
}

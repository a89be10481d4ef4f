import Foundation
import HeraldCore
import Testing

@testable import HeraldActions
@testable import HeraldServer

/// The overview's workers section says what keeps queued mail from going.
@Suite struct ConsoleOverviewTests {
    func worker(alive: Bool, relay: String? = nil) -> LiveWorker {
        LiveWorker(host: "mail-1", pid: 42, startedAt: Date(), heartbeatAt: Date(), alive: alive, relayProblem: relay)
    }

    let waiting = QueueStatus(pending: 3, nextDue: Date())

    @Test func aFailingRelayIsNamedBesideTheWaitingMail() {
        let html = ConsoleController.workerSection([worker(alive: true, relay: "TLS failed: no STARTTLS (since 12:03)")], waiting)
        #expect(html.contains("3 message(s) wait and the SMTP relay fails: TLS failed: no STARTTLS (since 12:03)."))
    }

    @Test func noLiveWorkerIsNamedAndAHealthyOneIsNotAnObstacle() {
        #expect(ConsoleController.workerSection([worker(alive: false)], waiting).contains("no worker is alive"))
        let healthy = ConsoleController.workerSection([worker(alive: true)], waiting)
        #expect(!healthy.contains("wait and"))
    }
}

import Foundation
import HeraldStore
import Testing

@testable import HeraldWorker

/// Of the workers on one ledger, one runs the message sweep: the first started among those whose heartbeats are
/// current.
@Suite struct SweeperElectionTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    func worker(_ id: String, startedAfter seconds: TimeInterval, heartbeatAge: TimeInterval = 1) -> WorkerProcess {
        WorkerProcess(
            id: id, host: "h", pid: 1, startedAt: start.addingTimeInterval(seconds), heartbeatAt: start, heartbeatAge: heartbeatAge)
    }

    @Test func theFirstStartedCurrentWorkerSweepsAndNoOtherDoes() {
        let workers = [worker("b", startedAfter: 5), worker("a", startedAfter: 10), worker("c", startedAfter: 5)]
        #expect(workers.map { Housekeeper.sweeps($0.id, among: workers, heartbeatTimeout: 30) } == [true, false, false])
    }

    @Test func aSilentWorkerDoesNotHoldTheSweepAndAWorkerAloneSweeps() {
        let workers = [worker("old", startedAfter: 0, heartbeatAge: 31), worker("new", startedAfter: 60)]
        #expect(Housekeeper.sweeps("new", among: workers, heartbeatTimeout: 30))
        #expect(Housekeeper.sweeps("alone", among: [], heartbeatTimeout: 30))
        #expect(!Housekeeper.sweeps("missing", among: [worker("other", startedAfter: 0)], heartbeatTimeout: 30))
    }
}

import Foundation
import Synchronization
import Testing

@testable import HeraldActions

/// The import's second thread: work in order, one piece at a time, and the first error kept.
@Suite struct HandoffThreadTests {
    struct Refused: Error, Equatable {}

    @Test func workRunsInOrderOnAnotherThreadOneAtATime() throws {
        let thread = HandoffThread(name: "test")
        let log = Mutex<[Int]>([])
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        let caller = Thread.current
        for index in 0..<20 {
            try thread.submit {
                if running.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlapped.store(true, ordering: .sequentiallyConsistent) }
                #expect(Thread.current != caller)
                usleep(1_000)
                log.withLock { $0.append(index) }
                running.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        try thread.finish()
        #expect(log.withLock { $0 } == Array(0..<20))
        let didOverlap = overlapped.load(ordering: .sequentiallyConsistent)
        #expect(!didOverlap)
    }

    @Test func theFirstErrorEndsTheStageAndComesBackFromSubmitAndFinish() throws {
        let thread = HandoffThread(name: "test")
        let ran = Atomic<Int>(0)
        try thread.submit { throw Refused() }
        #expect(throws: Refused.self) { try thread.submit { ran.add(1, ordering: .relaxed) } }
        #expect(throws: Refused.self) { try thread.finish() }
        let runs = ran.load(ordering: .relaxed)
        #expect(runs == 0)
    }
}

import Foundation
import HeraldCore
import Testing

@Suite struct ThreadNameTests {
    /// The kernel's name for the thread, as `top -H` and `ps -L` read it (Linux only: Darwin has no /proc).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/thread-self/comm")))
    func aThreadsNameReachesTheKernelCutToFifteenBytes() {
        let seen = Seen()
        let done = DispatchSemaphore(value: 0)
        for name in ["herald-commit", "herald-checkpoint"] {
            let thread = Thread.named(name) {
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                seen.names.append(comm.trimmingCharacters(in: .newlines))
                done.signal()
            }
            thread.start()
            done.wait()
        }
        #expect(seen.names == ["herald-commit", "herald-checkpoi"])
    }

    /// Written by one thread at a time: each test thread is waited for before the next starts.
    private final class Seen: @unchecked Sendable {
        var names: [String] = []
    }
}

import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

/// The console's action log: appended in order, read newest first, a page and a time window at a time.
@Suite struct ConsoleActionLogTests {
    let scratch = ScratchDirectory()
    let start = Date(milliseconds: 1_800_000_000_000)

    @Test(arguments: StoreKind.allCases)
    func actionsAreReadNewestFirstAPageAtATime(_ kind: StoreKind) throws {
        let store = try kind.makeStore(in: scratch)
        #expect(try store.consoleActions(ConsoleActionQuery()).isEmpty)
        var ids: [Int64] = []
        for minute in 0..<5 {
            let action = ConsoleAction(
                at: start.addingTimeInterval(Double(minute) * 60), actor: "admin:1a2b3c4d", action: "campaign paused",
                target: "campaign \(minute)", detail: minute == 4 ? nil : "n=\(minute)", result: minute == 3 ? .refused : .ok)
            ids.append(try store.recordConsoleAction(action))
        }
        #expect(ids == ids.sorted() && Set(ids).count == 5)
        let newest = try store.consoleActions(ConsoleActionQuery(limit: 2))
        #expect(newest.map(\.id) == [ids[4], ids[3]])
        #expect(newest[0].target == "campaign 4" && newest[0].detail == nil && newest[0].at == start.addingTimeInterval(240))
        #expect(newest[1].result == .refused && newest[1].actor == "admin:1a2b3c4d" && newest[1].detail == "n=3")
        let next = try store.consoleActions(ConsoleActionQuery(before: ids[3], limit: 2))
        #expect(next.map(\.id) == [ids[2], ids[1]])
        let window = ConsoleActionQuery(since: start.addingTimeInterval(60), until: start.addingTimeInterval(180))
        #expect(try store.consoleActions(window).map(\.id) == [ids[3], ids[2], ids[1]])
    }
}

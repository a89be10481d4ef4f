import Foundation
import HeraldCore
import Testing

@testable import HeraldActions

/// The overview's derived figures: bounce and complaint rates over what was sent, and the relay's health.
@Suite struct ConsoleOverviewTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func attempts(_ entries: [(String, String, Int)]) -> [SendActivity] {
        entries.map { SendActivity(bucket: now, outcome: $0.0, replyClass: $0.1, count: $0.2) }
    }

    func worker(alive: Bool = true, relayProblem: String? = nil) -> LiveWorker {
        LiveWorker(host: "h", pid: 1, startedAt: now, heartbeatAt: now, alive: alive, relayProblem: relayProblem)
    }

    func overview(sends: [SendActivity], feedback: [MailFeedback.Kind: Int]) -> ConsoleOverview {
        ConsoleOverview(
            window: .hour, buckets: ConsoleOverview.Window.hour.buckets(now: now), sends: sends, links: [], feedback: feedback,
            workers: [], queue: QueueStatus(pending: 0, nextDue: nil), relay: .idle)
    }

    @Test func ratesAreFeedbackOverTheMessagesSentInTheWindow() {
        let sends = attempts([("sent", "2xx", 900), ("sent", "2xx", 100), ("failed", "5xx", 40), ("deferred", "4xx", 7)])
        let view = overview(sends: sends, feedback: [.hard: 15, .soft: 5, .complaint: 2])
        #expect(view.sent == 1000)
        #expect(view.bounceRate == 0.02)
        #expect(view.complaintRate == 0.002)
        #expect(overview(sends: [], feedback: [.hard: 1]).bounceRate == nil, "no rate without sends")
    }

    @Test func windowsEndWithTheCurrentBucketOldestFirst() {
        let hour = ConsoleOverview.Window.hour.buckets(now: now.addingTimeInterval(299))
        #expect(hour.count == 12 && hour.last == now && hour.first == now.addingTimeInterval(-11 * 300))
        let day = ConsoleOverview.Window.day.buckets(now: now)
        #expect(day.count == 24 && zip(day, day.dropFirst()).allSatisfy { $1.timeIntervalSince($0) == 3600 })
    }

    @Test func relayHealthFollowsTheRecentAttemptsAndTheWorkersReports() {
        #expect(RelayHealth([], workers: [worker()]) == .idle)
        #expect(RelayHealth(attempts([("sent", "2xx", 5)]), workers: [worker()]) == .ok(sent: 5))
        #expect(RelayHealth(attempts([("sent", "2xx", 5), ("deferred", "4xx", 2)]), workers: []) == .degraded(failed: 2, attempts: 7))
        #expect(RelayHealth(attempts([("sent", "2xx", 5), ("failed", "5xx", 2)]), workers: []) == .ok(sent: 5), "a 550 is the address's")
        #expect(
            RelayHealth(attempts([("connection", "connection", 3)]), workers: [])
                == .failing("3 of 3 attempt(s) deferred or without a connection, none sent"))
        #expect(
            RelayHealth(attempts([("sent", "2xx", 5)]), workers: [worker(relayProblem: "refused since 10:00")])
                == .failing("refused since 10:00"), "a live worker's report wins")
        #expect(RelayHealth([], workers: [worker(alive: false, relayProblem: "old")]) == .idle, "a silent worker's report is stale")
    }
}

import Foundation
import HeraldCore

/// What the console's overview shows over a window of time: sends, clicks and redemptions per bucket, bounce and
/// complaint rates, and the workers, the queue and the relay now.
public struct ConsoleOverview: Sendable {
    /// The span the charts cover.
    public enum Window: String, Sendable, CaseIterable {
        /// Twelve five-minute buckets.
        case hour = "1h"
        /// Twenty-four one-hour buckets.
        case day = "24h"

        public var bucketSeconds: TimeInterval { self == .hour ? SendActivity.bucketSeconds : 3600 }
        public var bucketCount: Int { self == .hour ? 12 : 24 }

        /// The starts of the buckets ending with the current one, oldest first.
        public func buckets(now: Date) -> [Date] {
            let width = bucketSeconds
            let last = (now.timeIntervalSince1970 / width).rounded(.down) * width
            return (0..<bucketCount).reversed().map { back in Date(timeIntervalSince1970: last - Double(back) * width) }
        }
    }

    /// Bounce rates at or above this are shown as a warning: mailbox providers start filtering around 2 %.
    public static let bounceWarning = 0.02
    /// Complaint rates at or above this are shown as a warning: Gmail's sender guidelines ask for under 0.1 %.
    public static let complaintWarning = 0.001
    /// The span the relay's health is judged over.
    public static let relayWindow: TimeInterval = 300

    public let window: Window
    /// The buckets' starts, oldest first.
    public let buckets: [Date]
    public let sends: [SendActivity]
    public let links: [LinkActivity]
    public let feedback: [MailFeedback.Kind: Int]
    public let workers: [LiveWorker]
    public let queue: QueueStatus
    public let relay: RelayHealth

    /// Messages the relay accepted in the window.
    public var sent: Int { sends.filter { $0.outcome == "sent" }.reduce(0) { $0 + $1.count } }
    /// Hard and soft bounces received in the window, over the messages sent in it; nil when none was sent.
    public var bounceRate: Double? { rate((feedback[.hard] ?? 0) + (feedback[.soft] ?? 0)) }
    /// Complaints received in the window, over the messages sent in it; nil when none was sent.
    public var complaintRate: Double? { rate(feedback[.complaint] ?? 0) }

    private func rate(_ count: Int) -> Double? { sent == 0 ? nil : Double(count) / Double(sent) }
}

/// Whether the SMTP relay takes mail, judged over the last ``ConsoleOverview/relayWindow`` of attempts and the
/// workers' own reports.
public enum RelayHealth: Sendable, Hashable {
    /// Nothing was tried.
    case idle
    /// Every attempt was accepted.
    case ok(sent: Int)
    /// Some attempts were refused for now (4xx) or lost their connection, and some went.
    case degraded(failed: Int, attempts: Int)
    /// A worker reports the relay failing its connections, or nothing went and connections failed.
    case failing(String)

    init(_ recent: [SendActivity], workers: [LiveWorker]) {
        if let problem = workers.filter(\.alive).compactMap(\.relayProblem).first {
            self = .failing(problem)
            return
        }
        let attempts = recent.reduce(0) { $0 + $1.count }
        let sent = recent.filter { $0.outcome == "sent" }.reduce(0) { $0 + $1.count }
        let troubled = recent.filter { $0.replyClass == "connection" || $0.replyClass == "4xx" }.reduce(0) { $0 + $1.count }
        switch (attempts, sent, troubled) {
        case (0, _, _): self = .idle
        case (_, 0, 1...): self = .failing("\(troubled) of \(attempts) attempt(s) deferred or without a connection, none sent")
        case (_, _, 1...): self = .degraded(failed: troubled, attempts: attempts)
        default: self = .ok(sent: sent)
        }
    }
}

extension ConsoleService {
    /// The overview over `window` ending now.
    public func overview(_ window: ConsoleOverview.Window, now: Date = Date()) throws -> ConsoleOverview {
        let buckets = window.buckets(now: now)
        let since = buckets[0]
        let sends = try store.sendActivity(since: since, bucketSeconds: window.bucketSeconds)
        let links = try store.linkActivity(since: since, bucketSeconds: window.bucketSeconds)
        let feedback = try store.feedbackCounts(since: since)
        let recent = try store.sendActivity(
            since: now.addingTimeInterval(-ConsoleOverview.relayWindow), bucketSeconds: ConsoleOverview.relayWindow)
        let status = try workerStatus(now: now)
        return ConsoleOverview(
            window: window, buckets: buckets, sends: sends, links: links, feedback: feedback, workers: status.workers,
            queue: status.queue, relay: RelayHealth(recent, workers: status.workers))
    }
}

import Foundation
import Logging

/// What one worker run did.
public struct WorkerSummary: Sendable, CustomStringConvertible {
    public var sent = 0
    public var deferred = 0
    public var failed = 0
    public var dead = 0
    public var released = 0
    /// Rows given back uncharged after a connection-level failure.
    public var returned = 0
    /// Attempts whose final dot got no reply: the message may have been delivered.
    public var possiblyDelivered = 0
    /// SMTP connections opened over the run, summed over all threads.
    public var connections = 0
    public var seconds = 0.0

    public init() {}

    mutating func add(_ other: WorkerSummary) {
        sent += other.sent
        deferred += other.deferred
        failed += other.failed
        dead += other.dead
        released += other.released
        returned += other.returned
        possiblyDelivered += other.possiblyDelivered
        connections += other.connections
    }

    /// Sends per second over the run.
    var rate: Double { seconds > 0 ? Double(sent) / seconds : 0 }

    /// The counts as log fields, for `worker finished` (`log.format: json` keeps them apart from the message).
    public var metadata: Logger.Metadata {
        [
            "sent": "\(sent)", "deferred": "\(deferred)", "failed": "\(failed)", "dead": "\(dead)", "released": "\(released)",
            "returned": "\(returned)", "possiblyDelivered": "\(possiblyDelivered)", "connections": "\(connections)",
            "seconds": "\(String(format: "%.2f", seconds))", "rate": "\(String(format: "%.0f", rate))",
        ]
    }

    public var description: String {
        "sent \(sent), deferred \(deferred), failed \(failed), dead \(dead), released \(released), "
            + "returned after connection failures \(returned), possibly delivered \(possiblyDelivered); "
            + "\(connections) SMTP connection(s); \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", rate)) msg/s)"
    }
}

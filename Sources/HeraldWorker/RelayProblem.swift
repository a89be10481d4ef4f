import Foundation

/// Why the SMTP relay fails the worker's connections, and since when: what `/health`, `herald worker --until-empty`
/// and the logs say while the worker keeps retrying.
public struct RelayProblem: Sendable, Hashable, CustomStringConvertible {
    /// The connection's failure, as the worker records it (`authentication failed: 535 …`, `TLS failed: …`).
    public let reason: String
    /// The first failure of this outage.
    public let since: Date

    public init(reason: String, since: Date) {
        self.reason = reason
        self.since = since
    }

    /// The relay refuses the way Herald is configured to talk to it (TLS, authentication, or a server that requires
    /// authentication): retrying alone will not fix it, the configuration must change.
    public var isConfiguration: Bool {
        reason.hasPrefix("authentication failed") || reason.hasPrefix("TLS failed")
            || [530, 534, 538].contains { reason.contains("refused: \($0)") }
    }

    public var description: String {
        guard isConfiguration else { return reason }
        return "\(reason) (the relay refuses Herald's configuration: check smtp.url, smtp.requireStartTLS, smtp.username, "
            + "smtp.password and smtp.caFile; still retrying)"
    }

    /// `description` and when the outage began: `TLS failed: … (since 2026-11-28T12:03:00Z)`.
    public var sinceDescription: String {
        "\(description) (since \(since.formatted(.iso8601)))"
    }
}

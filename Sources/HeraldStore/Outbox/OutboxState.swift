/// Where an outbox row is in its life.
///
/// `queued → sending → sent | deferred → sending … | failed | dead`, plus `expired` and `cancelled`.
public enum OutboxState: String, Sendable, CaseIterable, Codable {
    case queued, sending, sent, deferred, failed, dead, expired, cancelled

    /// States the worker may still act on.
    public var isPending: Bool { self == .queued || self == .sending || self == .deferred }
}

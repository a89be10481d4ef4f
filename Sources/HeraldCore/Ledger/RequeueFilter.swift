import Foundation

/// Which outbox rows an operator's retry or cancel applies to.
public struct RequeueFilter: Sendable, Hashable {
    /// The states matched: for a retry `failed` and `dead`, for a cancel `queued` and `deferred` (the defaults).
    public var states: Set<OutboxState>
    public var campaign: Int64?
    /// Rows sent to this address or about its account.
    public var email: EmailAddress?
    /// Rows queued at or after this time.
    public var since: Date?
    /// Only these rows (the console's buttons on one message).
    public var ids: [Int64]?
    /// Every row in `states`: required when no other filter narrows the change, so an empty request never
    /// cancels (or retries) the whole ledger by accident.
    public var all: Bool

    /// Whether a campaign, an address or a time narrows the filter.
    public var isNarrowed: Bool { campaign != nil || email != nil || since != nil || ids != nil }

    public init(
        states: Set<OutboxState>, campaign: Int64? = nil, email: EmailAddress? = nil, since: Date? = nil, ids: [Int64]? = nil,
        all: Bool = false
    ) {
        self.all = all
        self.ids = ids
        self.states = states
        self.campaign = campaign
        self.email = email
        self.since = since
    }
}

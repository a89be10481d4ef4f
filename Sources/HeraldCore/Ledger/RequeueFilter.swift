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
    /// Rows queued at or before this time.
    public var until: Date?
    /// Rows of this action.
    public var kind: ActionKind?
    /// Only these rows (the console's buttons on one message).
    public var ids: [Int64]?
    /// Every row in `states`: required when no other filter narrows the change, so an empty request never
    /// cancels (or retries) the whole ledger by accident.
    public var all: Bool

    /// Whether a campaign, an address, a time or a list of rows narrows the filter (an action alone does not).
    public var isNarrowed: Bool { campaign != nil || email != nil || since != nil || until != nil || ids != nil }

    public init(
        states: Set<OutboxState>, campaign: Int64? = nil, email: EmailAddress? = nil, since: Date? = nil, until: Date? = nil,
        kind: ActionKind? = nil, ids: [Int64]? = nil, all: Bool = false
    ) {
        self.until = until
        self.kind = kind
        self.all = all
        self.ids = ids
        self.states = states
        self.campaign = campaign
        self.email = email
        self.since = since
    }
}

import Foundation

/// A message search (the console's, `herald messages`): any of state, action, address, campaign and queue time.
public struct MessageSearch: Sendable, Hashable {
    public var state: OutboxState?
    public var kind: ActionKind?
    /// Rows sent to this address or about its account.
    public var email: EmailAddress?
    public var campaign: Int64?
    /// Rows queued at or after this time.
    public var since: Date?
    /// Rows queued at or before this time.
    public var until: Date?
    /// Keyset paging: only rows with a smaller id (the page after one ending at this id, in newest-first order).
    public var olderThan: Int64?
    /// Keyset paging: only rows with a larger id (the page before one starting at this id); the nearest ones are
    /// returned, still newest first.
    public var newerThan: Int64?

    public init(
        state: OutboxState? = nil, kind: ActionKind? = nil, email: EmailAddress? = nil, campaign: Int64? = nil, since: Date? = nil,
        until: Date? = nil
    ) {
        self.state = state
        self.kind = kind
        self.email = email
        self.campaign = campaign
        self.since = since
        self.until = until
    }
}

/// One outbox row and everything the ledger recorded about it, oldest first.
public struct MessageHistory: Sendable, Hashable {
    public let message: OutboxMessage
    public let events: [Event]

    public init(message: OutboxMessage, events: [Event]) {
        self.message = message
        self.events = events
    }

    /// One entry of a message's history.
    public struct Event: Sendable, Hashable {
        /// `queued`, `attempt`, `retried`, `cancelled`, a link event (`click`, `redeemed`, `rejected`), or
        /// feedback (`hard`, `soft`, `complaint`, `unsubscribe`).
        public let kind: String
        public let at: Date
        /// An attempt's outcome (`sent`, `deferred`, …), an operator event's actor, a bounce's status.
        public let outcome: String?
        public let replyCode: Int?
        /// The SMTP reply text, a bounce's diagnostic, a link event's detail.
        public let detail: String?

        public init(kind: String, at: Date, outcome: String? = nil, replyCode: Int? = nil, detail: String? = nil) {
            self.kind = kind
            self.at = at
            self.outcome = outcome
            self.replyCode = replyCode
            self.detail = detail
        }
    }
}

/// Delivery attempts finished in one five-minute bucket, by outcome and SMTP reply class.
public struct SendActivity: Sendable, Hashable {
    public let bucket: Date
    /// `sent`, `deferred`, `failed`, `dead`, `interrupted` or `connection`.
    public let outcome: String
    /// `2xx`, `4xx`, `5xx`, or `connection` when the server gave no reply.
    public let replyClass: String
    public let count: Int

    public init(bucket: Date, outcome: String, replyClass: String, count: Int) {
        self.bucket = bucket
        self.outcome = outcome
        self.replyClass = replyClass
        self.count = count
    }

    /// The width of a bucket.
    public static let bucketSeconds: TimeInterval = 300
}

/// Link events in one bucket of time: `click` (the link was opened) or `redeemed` (its code was spent).
public struct LinkActivity: Sendable, Hashable {
    public let bucket: Date
    public let kind: String
    public let count: Int

    public init(bucket: Date, kind: String, count: Int) {
        self.bucket = bucket
        self.kind = kind
        self.count = count
    }
}

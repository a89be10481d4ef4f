import Foundation

/// What a webhook endpoint can be told about: a message's outcome, and what its recipient did with the link.
///
/// `possibly-delivered`: the message ended without a reply to its final dot, resent as often as allowed.
public enum WebhookEvent: String, Sendable, CaseIterable, Codable, Hashable {
    case sent, failed, dead, bounced, clicked, redeemed, expired
    case possiblyDelivered = "possibly-delivered"
}

/// Where a webhook delivery is: waiting for its next POST, answered with 2xx, or out of attempts.
public enum WebhookDeliveryState: String, Sendable, CaseIterable, Codable {
    case queued, delivered, dead
}

/// One event for one endpoint, claimed for a POST.
public struct WebhookDelivery: Sendable, Hashable {
    public let id: Int64
    /// The event's id, the same for every endpoint and every retry (receivers de-duplicate on it).
    public let eventID: String
    public let endpoint: String
    public let event: String
    /// The JSON body, exactly as it is signed and sent.
    public let payload: String
    /// POSTs so far, this one included.
    public let attempts: Int
    public let leaseUntil: Date

    public init(id: Int64, eventID: String, endpoint: String, event: String, payload: String, attempts: Int, leaseUntil: Date) {
        self.id = id
        self.eventID = eventID
        self.endpoint = endpoint
        self.event = event
        self.payload = payload
        self.attempts = attempts
        self.leaseUntil = leaseUntil
    }
}

/// How a POST of a delivery ended.
public struct WebhookOutcome: Sendable, Hashable {
    public enum Decision: Sendable, Hashable {
        case delivered
        case retry(at: Date)
        case dead
    }

    public let decision: Decision
    /// The HTTP status, when the endpoint answered.
    public let status: Int?
    /// Why it was not delivered (the status and the start of the body, or the network error).
    public let error: String?
    public let at: Date

    public init(decision: Decision, status: Int?, error: String?, at: Date) {
        self.decision = decision
        self.status = status
        self.error = error
        self.at = at
    }
}

/// One endpoint's deliveries, for `herald webhooks list`.
public struct WebhookEndpointSummary: Sendable, Hashable, Codable {
    public let endpoint: String
    public let queued: Int
    public let delivered: Int
    public let dead: Int
    /// When the oldest queued delivery was created: how far behind the endpoint is.
    public let oldestQueuedAt: Date?
    public let lastDeliveredAt: Date?
    public let lastError: String?
    public let lastErrorAt: Date?

    public init(
        endpoint: String, queued: Int, delivered: Int, dead: Int, oldestQueuedAt: Date?, lastDeliveredAt: Date?, lastError: String?,
        lastErrorAt: Date?
    ) {
        self.endpoint = endpoint
        self.queued = queued
        self.delivered = delivered
        self.dead = dead
        self.oldestQueuedAt = oldestQueuedAt
        self.lastDeliveredAt = lastDeliveredAt
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
    }
}

/// A delivery whose last POST failed and that is not delivered: queued for another try, or dead.
public struct WebhookFailure: Sendable, Hashable, Codable {
    public let id: Int64
    public let endpoint: String
    public let event: String
    public let state: WebhookDeliveryState
    public let attempts: Int
    /// The endpoint's HTTP status, when it answered.
    public let lastStatus: Int?
    /// Why the last POST failed (the status and the start of the body, or the network error).
    public let lastError: String
    public let lastAttemptAt: Date?
    public let createdAt: Date

    public init(
        id: Int64, endpoint: String, event: String, state: WebhookDeliveryState, attempts: Int, lastStatus: Int?, lastError: String,
        lastAttemptAt: Date?, createdAt: Date
    ) {
        self.id = id
        self.endpoint = endpoint
        self.event = event
        self.state = state
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.lastAttemptAt = lastAttemptAt
        self.createdAt = createdAt
    }
}

/// Which deliveries `herald webhooks replay` queues again; nil matches anything.
public struct WebhookReplayFilter: Sendable, Hashable {
    public var endpoint: String?
    public var state: WebhookDeliveryState?
    public var since: Date?
    public var id: Int64?

    public init(endpoint: String? = nil, state: WebhookDeliveryState? = nil, since: Date? = nil, id: Int64? = nil) {
        self.endpoint = endpoint
        self.state = state
        self.since = since
        self.id = id
    }
}

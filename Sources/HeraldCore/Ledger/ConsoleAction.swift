import Foundation

/// One change made in the `/admin` console, as the ledger's action log keeps it: when, who, what, to what, and how it
/// ended. Never a token or a code: the detail holds counts and outcomes.
public struct ConsoleAction: Sendable, Hashable, Codable {
    /// How the change ended.
    public enum Result: String, Sendable, Hashable, Codable, CaseIterable {
        /// Done.
        case ok
        /// Not allowed: a read-only session asked.
        case refused
        /// Asked for and not done: bad input, nothing to change, or the ledger unavailable.
        case failed
    }

    /// The log's id: newer changes have larger ones (0 before it is recorded).
    public var id: Int64
    public var at: Date
    /// The session's role and label: `admin:1a2b3c4d`, `read-only:9f8e7d6c`.
    public var actor: String
    /// `campaign paused`, `suppressed`, `template saved`, ….
    public var action: String
    /// What it changed: `campaign 12`, `message 40`, an address, `reset-password/en`.
    public var target: String?
    /// Counts and outcomes (`added=3 addresses=4`), or why it failed.
    public var detail: String?
    public var result: Result

    public init(
        id: Int64 = 0, at: Date, actor: String, action: String, target: String? = nil, detail: String? = nil, result: Result = .ok
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.detail = detail
        self.result = result
    }
}

/// Which console actions to read: newest first, within a time window, before an id (paging).
public struct ConsoleActionQuery: Sendable, Hashable {
    public var since: Date?
    public var until: Date?
    /// Only actions with a smaller id: the last id of the previous page.
    public var before: Int64?
    public var limit: Int

    public init(since: Date? = nil, until: Date? = nil, before: Int64? = nil, limit: Int = 100) {
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }
}

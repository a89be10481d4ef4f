import Foundation

/// A bulk campaign: one action sent to many recipients at a controlled rate.
public struct Campaign: Sendable, Hashable {
    /// Whether the worker may send the campaign's rows.
    public enum State: String, Sendable, CaseIterable { case active, paused, cancelled }

    public let id: Int64
    public let name: String
    public let kind: ActionKind
    public let state: State
    public let settings: ActionCodeSettings
    /// Messages per second; nil means as fast as the worker goes.
    public let rate: Double?
    public let startAt: Date
    public let linkLifetime: TimeInterval?
    public let rejected: Int
    public let createdAt: Date

    public init(
        id: Int64, name: String, kind: ActionKind, state: State, settings: ActionCodeSettings, rate: Double?, startAt: Date,
        linkLifetime: TimeInterval?, rejected: Int, createdAt: Date
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.state = state
        self.settings = settings
        self.rate = rate
        self.startAt = startAt
        self.linkLifetime = linkLifetime
        self.rejected = rejected
        self.createdAt = createdAt
    }

    /// `active`, `paused`, `cancelled`, or `done` once an active campaign has nothing left to send.
    public func status(counts: [OutboxState: Int]) -> String {
        let pending = counts.filter { $0.key.isPending }.values.reduce(0, +)
        return state == .active && pending == 0 && !counts.isEmpty ? "done" : state.rawValue
    }
}

/// One recipient of a campaign, validated and ready to be queued.
public struct CampaignRecipient: Sendable, Hashable {
    /// The canonical address.
    public var email: String
    public var displayName: String?
    public var locale: LocaleTag
    /// Extra template variables as a JSON object, or nil for none.
    public var variablesJSON: String?
    /// The recipients-file line it came from, or nil for account imports.
    public var line: Int?

    public init(email: String, displayName: String?, locale: LocaleTag, variablesJSON: String?, line: Int?) {
        self.email = email
        self.displayName = displayName
        self.locale = locale
        self.variablesJSON = variablesJSON
        self.line = line
    }
}

/// What queueing one campaign recipient did.
public enum CampaignAddOutcome: Sendable, Hashable {
    case imported
    /// The same line of an earlier run of this import: skipped.
    case alreadyImported
    /// The address is already in the campaign from another line.
    case duplicate
}

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
    /// When message retention (`ledger.messageRetention`) first deleted some of its rows: its import cannot run
    /// again (the rows that would tell it who was mailed are gone).
    public let prunedAt: Date?

    public init(
        id: Int64, name: String, kind: ActionKind, state: State, settings: ActionCodeSettings, rate: Double?, startAt: Date,
        linkLifetime: TimeInterval?, rejected: Int, createdAt: Date, prunedAt: Date? = nil
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
        self.prunedAt = prunedAt
    }

    /// Why rows cannot be queued for a campaign whose rows were pruned.
    public static func prunedImportRefusal(id: Int64, name: String, prunedAt: Date) -> HeraldError {
        HeraldError(
            .argumentError,
            "campaign \(id) \"\(name)\" finished and its messages were pruned on \(prunedAt.iso8601) (ledger.messageRetention): "
                + "importing into it again would mail everyone twice; choose another name")
    }

}

/// A campaign's progress from its rows' counts, as every reader shows it: the console, `herald campaigns list` and
/// `watch`, the reports and the admin API, so their states and counts agree.
public struct CampaignProgress: Sendable, Hashable {
    /// What a campaign is doing: its `Campaign.State`, with `scheduled` (active, its start still ahead) and `done`
    /// (active, with rows and none of them left to send).
    public enum Status: String, Sendable, CaseIterable {
        case scheduled, active, paused, cancelled, done

        /// Whether pause applies: the campaign may still send.
        public var canPause: Bool { self == .scheduled || self == .active }
        /// Whether cancel applies: something may still be sent.
        public var canCancel: Bool { self != .cancelled && self != .done }
    }

    public let campaign: Campaign
    public let counts: [OutboxState: Int]
    public let status: Status

    public init(_ campaign: Campaign, counts: [OutboxState: Int], now: Date = Date()) {
        self.campaign = campaign
        self.counts = counts
        let pending = counts.filter { $0.key.isPending }.values.reduce(0, +)
        let total = counts.values.reduce(0, +)
        status =
            switch campaign.state {
            case .cancelled: .cancelled
            case .paused: .paused
            // No rows yet is an import still under way, not a finished campaign.
            case .active where pending == 0 && total > 0: .done
            case .active where campaign.startAt > now: .scheduled
            case .active: .active
            }
    }

    /// Every row the campaign queued.
    public var total: Int { counts.values.reduce(0, +) }
    /// Rows the relay accepted: sent, and those that bounced or drew a complaint afterwards.
    public var sent: Int { [OutboxState.sent, .bounced, .complained].reduce(0) { $0 + (counts[$1] ?? 0) } }
    /// Rows that will never be delivered: refused for good (`failed`) or out of attempts (`dead`).
    public var failed: Int { (counts[.failed] ?? 0) + (counts[.dead] ?? 0) }
    /// Rows still to go: queued, deferred or being sent.
    public var pending: Int { counts.filter { $0.key.isPending }.values.reduce(0, +) }
    public var deferred: Int { counts[.deferred] ?? 0 }
}

/// How fast a campaign sends now: its messages sent over the last ``window``, and when the rest would be sent at that
/// rate. The console's campaigns page, `GET /admin/campaigns` and `herald campaigns list --format json` read it alike.
public struct CampaignPace: Sendable, Hashable {
    /// The span the live rate is measured over.
    public static let window: TimeInterval = 60

    /// Messages a second over the last ``window``.
    public let rate: Double
    /// Seconds until nothing is pending at ``rate``: nil while nothing sends (paused, scheduled, waiting for a worker
    /// or the relay) or nothing is left.
    public let eta: TimeInterval?

    public init(_ progress: CampaignProgress, sentInWindow: Int) {
        rate = Double(sentInWindow) / Self.window
        let sending = progress.status == .active && progress.pending > 0 && rate > 0
        eta = sending ? Double(progress.pending) / rate : nil
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
